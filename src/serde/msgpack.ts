import {
  AIMessage,
  AIMessageChunk,
  ChatMessage,
  ChatMessageChunk,
  FunctionMessage,
  FunctionMessageChunk,
  HumanMessage,
  HumanMessageChunk,
  RemoveMessage,
  SystemMessage,
  SystemMessageChunk,
  ToolMessage,
  ToolMessageChunk,
} from "@langchain/core/messages";
import { DeltaSnapshot, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { Decoder, Encoder, ExtData, ExtensionCodec } from "@msgpack/msgpack";
import { SerializationError } from "../errors.js";

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

/** Fields a message constructor fills with an empty value itself: not stored when empty. */
const DEFAULTED_FIELDS = ["additional_kwargs", "response_metadata", "tool_calls", "invalid_tool_calls"];

const isEmpty = (value: unknown) =>
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === "object" &&
    value !== null &&
    Object.getPrototypeOf(value) === Object.prototype &&
    Object.keys(value).length === 0);

/**
 * LangChain classes revived from `{ lc: 1, type: "constructor" }` records. Only
 * these are ever instantiated; any other record comes back as inert data, so a
 * row written by an attacker cannot make us load a module or run a constructor.
 */
const MESSAGE_CLASSES: Record<string, new (fields: never) => object> = {
  AIMessage,
  AIMessageChunk,
  ChatMessage,
  ChatMessageChunk,
  FunctionMessage,
  FunctionMessageChunk,
  HumanMessage,
  HumanMessageChunk,
  RemoveMessage,
  SystemMessage,
  SystemMessageChunk,
  ToolMessage,
  ToolMessageChunk,
};

const MESSAGE_CLASS_NAMES = new Map<unknown, string>(
  Object.entries(MESSAGE_CLASSES).map(([name, messageClass]) => [messageClass, name]),
);

interface LcRecord {
  lc: number;
  type: string;
  id: unknown;
  kwargs?: unknown;
}

function isLangChainSerializable(value: object): value is { toJSON(): LcRecord } {
  const candidate = value as { lc_serializable?: unknown; toJSON?: unknown };
  return candidate.lc_serializable === true && typeof candidate.toJSON === "function";
}

/** [class name, fields] of a message of exactly an allowlisted class (a subclass would lose its behaviour). */
function compactMessage(value: object): [string, Record<string, unknown>] | undefined {
  const name = MESSAGE_CLASS_NAMES.get(value.constructor);
  if (name === undefined || !isLangChainSerializable(value)) return undefined;
  const { type, kwargs } = value.toJSON();
  if (type !== "constructor" || typeof kwargs !== "object" || kwargs === null) return undefined;
  const fields = Object.entries(kwargs).filter(([key, field]) => !(DEFAULTED_FIELDS.includes(key) && isEmpty(field)));
  return [name, Object.fromEntries(fields)];
}

function reviveLangChain(record: unknown): unknown {
  if (typeof record !== "object" || record === null) return record;
  const { lc, type, id, kwargs } = record as LcRecord;
  const isMessagePath =
    Array.isArray(id) &&
    id.length >= 2 &&
    (id[0] === "langchain_core" || id[0] === "langchain") &&
    id.includes("messages");
  const name = Array.isArray(id) ? id[id.length - 1] : undefined;
  if (
    lc === 1 &&
    type === "constructor" &&
    isMessagePath &&
    typeof name === "string" &&
    Object.hasOwn(MESSAGE_CLASSES, name) &&
    typeof kwargs === "object" &&
    kwargs !== null
  ) {
    try {
      return new MESSAGE_CLASSES[name](kwargs as never);
    } catch {
      return record;
    }
  }
  return record;
}

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
const UNDEFINED = new ExtData(EXT.undefined, new Uint8Array(0));

/**
 * MessagePack turns `undefined` into nil before extensions are consulted, so the
 * encoder is given a hook that writes our undefined extension instead.
 */
function createEncoder(): Encoder {
  const encoder = new Encoder({ extensionCodec: codec, useBigInt64: false });
  const internals = encoder as unknown as {
    doEncode(object: unknown, depth: number): void;
    encodeExtension(ext: ExtData): void;
  };
  const doEncode = internals.doEncode.bind(encoder);
  internals.doEncode = (object, depth) => {
    const message = typeof object === "object" && object !== null ? compactMessage(object) : undefined;
    if (object === undefined) internals.encodeExtension(UNDEFINED);
    else if (message) internals.encodeExtension(new ExtData(EXT.message, encodeValue(message)));
    else if (typeof object === "object" && object !== null && Object.hasOwn(object, "__proto__")) {
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

function encodeValue(value: unknown): Uint8Array {
  encoders[encodeDepth] ??= createEncoder();
  const encoder = encoders[encodeDepth++];
  try {
    return encoder.encode(value); // a copy: the encoder's buffer is reused
  } finally {
    encodeDepth--;
  }
}

function decodeValue(data: Uint8Array): unknown {
  decoders[decodeDepth] ??= new Decoder({ extensionCodec: codec });
  const decoder = decoders[decodeDepth++];
  try {
    return decoder.decode(data);
  } finally {
    decodeDepth--;
  }
}

/**
 * Revives values written by LangGraph's JsonPlusSerializer: its lc:2 records
 * (undefined, Set, Map, RegExp, Error, Uint8Array, DeltaSnapshot) and LangChain
 * messages; every other record stays plain data.
 */
function reviveJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reviveJson);
  if (value === null || typeof value !== "object") return value;
  const object: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    Object.defineProperty(object, key, {
      value: reviveJson(item),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  const record = object as { lc?: unknown; type?: unknown; id?: unknown; args?: unknown; value?: unknown };
  if (record.lc === 1) return reviveLangChain(object);
  if (record.lc !== 2) return object;
  if (record.type === "undefined") return undefined;
  if (record.type === "delta_snapshot" && "value" in record) return new DeltaSnapshot(record.value);
  const name = Array.isArray(record.id) && record.id.length === 1 ? record.id[0] : undefined;
  const args = Array.isArray(record.args) ? record.args : [];
  if (record.type !== "constructor") return object;
  try {
    if (name === "Set" && Array.isArray(args[0])) return new Set(args[0]);
    if (name === "Map" && Array.isArray(args[0])) return new Map(args[0] as [unknown, unknown][]);
    if (name === "RegExp" && typeof args[0] === "string" && typeof args[1] === "string") {
      return new RegExp(args[0], args[1]);
    }
    if (name === "Error" && typeof args[0] === "string") return new Error(args[0]);
    if (name === "Uint8Array" && Array.isArray(args[0])) return Uint8Array.from(args[0] as number[]);
  } catch {
    return object;
  }
  return object;
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
        // LangGraph's JSON format, revived by our own rules: JsonPlusSerializer would
        // instantiate any langchain_core class a stored record names.
        return reviveJson(JSON.parse(typeof data === "string" ? data : new TextDecoder().decode(data)));
      default:
        throw new SerializationError(`unknown serialization type "${type}"`);
    }
  }
}
