/**
 * `MsgpackSerializer`, the saver's default serializer: MessagePack with extension types for
 * what JSON loses, and reading of LangGraph's JSON format and raw bytes.
 */
import { DeltaSnapshot, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { Decoder, Encoder, ExtData, ExtensionCodec } from "@msgpack/msgpack";
import { SerializationError } from "../errors.js";
import { checkMsgpack, MAX_NESTING_DEPTH } from "./bounds.js";
import { loadJson } from "./json.js";
import { compactMessage, isLangChainSerializable, reviveLangChain } from "./messages.js";

/**
 * Extension codes of our MessagePack format. Stored data depends on them: never
 * renumber, only add. (-1 is MessagePack's own timestamp, used for Date.)
 */
const EXT = {
  undefined: 1,
  map: 2,
  set: 3,
  lcObject: 4,
  error: 5,
  regexp: 6,
  bigint: 7,
  deltaSnapshot: 8,
  /** A plain object with an own "__proto__" key, which MessagePack decoders refuse as a map. */
  protoKeyObject: 9,
  /** A message of an allowlisted class, stored compactly as [class name, fields]. */
  message: 10,
} as const;

function buildCodec(): ExtensionCodec {
  const codec = new ExtensionCodec();
  // The codec tries its encoders by type code for every non-primitive value; the hook
  // in createEncoder handles the types that must come first.
  codec.register({
    type: EXT.map,
    encode: (value) => (value instanceof Map ? encodeValue([...value.entries()]) : null),
    decode: (data) => new Map(decodeValue(data) as [unknown, unknown][]),
  });
  codec.register({
    type: EXT.set,
    encode: (value) => (value instanceof Set ? encodeValue([...value]) : null),
    decode: (data) => new Set(decodeValue(data) as unknown[]),
  });
  codec.register({
    type: EXT.deltaSnapshot,
    encode: (value) => (value instanceof DeltaSnapshot ? encodeValue(value.value) : null),
    decode: (data) => new DeltaSnapshot(decodeValue(data)),
  });
  codec.register({
    type: EXT.message,
    encode: () => null, // written by the encoder hook below, ahead of the record form (4)
    decode: (data) => {
      const [name, fields] = decodeValue(data) as [unknown, unknown];
      return reviveLangChain({ lc: 1, type: "constructor", id: ["langchain_core", "messages", name], kwargs: fields });
    },
  });
  codec.register({
    type: EXT.lcObject,
    encode: (value) =>
      typeof value === "object" && value !== null && isLangChainSerializable(value)
        ? encodeValue(value.toJSON())
        : null,
    decode: (data) => reviveLangChain(decodeValue(data)),
  });
  codec.register({
    type: EXT.error,
    encode: (value) => (value instanceof Error ? encodeValue({ name: value.name, message: value.message }) : null),
    decode: (data) => {
      const { name, message } = decodeValue(data) as { name?: unknown; message?: unknown };
      const error = new Error(String(message ?? ""));
      if (typeof name === "string") error.name = name;
      return error;
    },
  });
  codec.register({
    type: EXT.regexp,
    encode: (value) => (value instanceof RegExp ? encodeValue([value.source, value.flags]) : null),
    decode: (data) => {
      const [source, flags] = decodeValue(data) as [string, string];
      return new RegExp(source, flags);
    },
  });
  codec.register({
    type: EXT.bigint,
    encode: (value) => (typeof value === "bigint" ? new TextEncoder().encode(value.toString()) : null),
    decode: (data) => BigInt(new TextDecoder().decode(data)),
  });
  codec.register({
    type: EXT.protoKeyObject,
    encode: () => null, // written by the encoder hook below
    decode: (data) => {
      const object: Record<string, unknown> = {};
      for (const [key, value] of decodeValue(data) as [string, unknown][]) {
        Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
      }
      return object;
    },
  });
  codec.register({
    type: EXT.undefined,
    encode: () => null, // written by the encoder hook below, never reached through here
    decode: () => undefined,
  });
  return codec;
}

const codec = buildCodec();
/** Extension types whose payload is MessagePack again (checked with the document that holds it). */
const NESTED_EXT = new Set<number>([
  EXT.map,
  EXT.set,
  EXT.lcObject,
  EXT.error,
  EXT.regexp,
  EXT.deltaSnapshot,
  EXT.protoKeyObject,
  EXT.message,
]);
const UNDEFINED = new ExtData(EXT.undefined, new Uint8Array(0));

/**
 * An object that says how it is written as JSON (its `toJSON`), other than the values
 * this format keeps better than JSON does (Date, bytes, LangChain records). Such an
 * object is stored as what `toJSON` returns, as LangGraph's JsonPlusSerializer (and
 * so MemorySaver) stores it: its own fields may be private, or functions.
 */
function hasOwnJson(value: unknown): value is { toJSON(): unknown } {
  if (typeof value !== "object" || value === null) return false;
  if (typeof (value as { toJSON?: unknown }).toJSON !== "function") return false;
  return !(value instanceof Date) && !ArrayBuffer.isView(value) && !isLangChainSerializable(value);
}

/**
 * MessagePack turns `undefined` into nil before extensions are consulted, so the
 * encoder is given a hook that writes our undefined extension instead.
 */
function createEncoder(level: number): Encoder {
  // The library's own depth bound (100 by default) would refuse plain values far below
  // ours; ours is checked in the hook below. +1: the library counts a scalar leaf too.
  const encoder = new Encoder({ extensionCodec: codec, useBigInt64: false, maxDepth: MAX_NESTING_DEPTH + 1 });
  const internals = encoder as unknown as {
    doEncode(object: unknown, depth: number): void;
    encodeExtension(ext: ExtData): void;
  };
  const doEncode = internals.doEncode.bind(encoder);
  // What a toJSON just returned: encoded by the rules below, but its own toJSON is not
  // applied again (JSON.stringify applies it once), so one returning itself terminates.
  let fromToJson: { value: unknown } | undefined;
  internals.doEncode = (object, depth) => {
    const converted = fromToJson !== undefined && fromToJson.value === object;
    fromToJson = undefined;
    // The same nesting depth the reader counts (see checkMsgpack): what is written can be read.
    if (typeof object === "object" && object !== null) {
      const nesting = encodeBase[level] + depth; // the encoder counts the top-level value as depth 1
      if (nesting > MAX_NESTING_DEPTH) throw new Error(`value nested deeper than ${MAX_NESTING_DEPTH} levels`);
      encodeReached[level] = nesting;
    }
    const message = typeof object === "object" && object !== null ? compactMessage(object) : undefined;
    if (object === undefined) internals.encodeExtension(UNDEFINED);
    else if (message) internals.encodeExtension(new ExtData(EXT.message, encodeValue(message)));
    else if (!converted && hasOwnJson(object)) {
      fromToJson = { value: object.toJSON() };
      internals.doEncode(fromToJson.value, depth);
    } else if (typeof object === "object" && object !== null && Object.hasOwn(object, "__proto__")) {
      internals.encodeExtension(new ExtData(EXT.protoKeyObject, encodeValue(Object.entries(object))));
    } else if (typeof object === "bigint")
      internals.encodeExtension(new ExtData(EXT.bigint, new TextEncoder().encode(object.toString())));
    else doEncode(object, depth);
  };
  return encoder;
}

/**
 * Encoders and decoders by nesting depth: an extension's payload is encoded (or
 * decoded) while the outer value's coder is still busy, so each level has its own,
 * made once and reused (a fresh one per message allocated a buffer every time).
 */
const encoders: Encoder[] = [];
const decoders: Decoder[] = [];
let encodeDepth = 0;
let decodeDepth = 0;
/** Per encoder level: the nesting depth it starts at, and the depth of the value it last entered. */
const encodeBase: number[] = [];
const encodeReached: number[] = [];

function encodeValue(value: unknown): Uint8Array {
  const level = encodeDepth;
  encoders[level] ??= createEncoder(level);
  // An extension's payload sits one level inside the value being encoded one level up.
  encodeBase[level] = level === 0 ? 0 : encodeReached[level - 1];
  const encoder = encoders[encodeDepth++];
  try {
    return encoder.encode(value); // a copy: the encoder's buffer is reused
  } finally {
    encodeDepth--;
  }
}

function decodeValue(data: Uint8Array): unknown {
  // The whole document, extension payloads included, is checked once before decoding:
  // the decoder allocates what a header declares before it reads any element.
  if (decodeDepth === 0) checkMsgpack(data, NESTED_EXT);
  decoders[decodeDepth] ??= new Decoder({ extensionCodec: codec });
  const decoder = decoders[decodeDepth++];
  try {
    return decoder.decode(data);
  } finally {
    decodeDepth--;
  }
}

/**
 * The saver's default serializer: MessagePack with extension types for values JSON
 * loses (Uint8Array as bytes, Date, Map, Set, undefined, bigint, RegExp, errors,
 * LangChain messages). Reads LangGraph's JSON format ("json") and raw "bytes" too,
 * so data written with the default serializer stays readable.
 */
export class MsgpackSerializer implements SerializerProtocol {
  async dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    if (value instanceof Uint8Array && value.constructor === Uint8Array) return ["bytes", value];
    try {
      return ["msgpack", encodeValue(value)];
    } catch (error) {
      throw new SerializationError(`cannot serialize value: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    switch (type) {
      case "msgpack":
        if (typeof data === "string") throw new SerializationError("msgpack data must be bytes");
        try {
          return decodeValue(data);
        } catch (error) {
          throw new SerializationError(
            `cannot decode stored msgpack value: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      case "bytes":
        return typeof data === "string" ? new TextEncoder().encode(data) : data;
      case "json":
        return loadJson(data);
      default:
        throw new SerializationError(`unknown serialization type "${type}"`);
    }
  }
}
