import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { Overwrite } from "@langchain/langgraph";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { ExtData, encode } from "@msgpack/msgpack";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MsgpackSerializer, SerializationError } from "../../src/index.js";
import { MAX_NESTING_DEPTH } from "../../src/serde/bounds.js";

const serde = new MsgpackSerializer();
const roundTrip = async (value: unknown) => serde.loadsTyped(...(await serde.dumpsTyped(value)));

describe("MsgpackSerializer", () => {
  it("round-trips the values JSON loses", async () => {
    const value = {
      date: new Date("2024-05-06T07:08:09.123Z"),
      map: new Map<unknown, unknown>([
        ["a", 1],
        [2, { b: [3] }],
      ]),
      set: new Set(["x", "y"]),
      nothing: undefined,
      list: [1, undefined, null, "two"],
      big: 12345678901234567890n,
      pattern: /ab+c/gi,
      nested: { bytes: new Uint8Array([0, 1, 255]) },
    };
    const back = (await roundTrip(value)) as typeof value;
    expect(back).toStrictEqual(value);
    expect(Object.hasOwn(back, "nothing")).toBe(true);
    expect(back.list).toHaveLength(4);
    expect(back.list[1]).toBeUndefined();
  });

  it("stores a Uint8Array as bytes, not as an array of numbers", async () => {
    const bytes = new Uint8Array(10_000).fill(7);
    expect(await serde.dumpsTyped(bytes)).toEqual(["bytes", bytes]);
    const [type, data] = await serde.dumpsTyped({ payload: bytes });
    expect(type).toBe("msgpack");
    expect(data.byteLength).toBeLessThan(10_100);
    expect(((await serde.loadsTyped(type, data)) as { payload: Uint8Array }).payload).toEqual(bytes);
  });

  it("revives LangChain messages as their classes", async () => {
    const messages = [
      new HumanMessage({ content: "hi", id: "1" }),
      new AIMessage({ content: "", tool_calls: [{ name: "search", args: { q: "x" }, id: "call-1" }] }),
      new ToolMessage({ content: "result", tool_call_id: "call-1" }),
    ];
    const back = (await roundTrip({ messages })) as { messages: unknown[] };
    expect(back.messages[0]).toBeInstanceOf(HumanMessage);
    expect(back.messages[1]).toBeInstanceOf(AIMessage);
    expect(back.messages[2]).toBeInstanceOf(ToolMessage);
    expect((back.messages[1] as AIMessage).tool_calls?.[0]?.args).toEqual({ q: "x" });
    expect((back.messages[2] as ToolMessage).tool_call_id).toBe("call-1");
  });

  it("stores messages compactly and gets back equal objects", async () => {
    const messages = [
      new HumanMessage({ content: "hi", id: "1", additional_kwargs: { tag: "x" } }),
      new AIMessage({
        content: [{ type: "text", text: "ok" }],
        tool_calls: [{ name: "search", args: { q: "x" }, id: "call-1" }],
        response_metadata: { model: "m" },
      }),
      new ToolMessage({ content: "result", tool_call_id: "call-1", name: "search" }),
      new AIMessage("plain"),
    ];
    const [type, data] = await serde.dumpsTyped(messages);
    const back = await serde.loadsTyped(type, data);
    expect(back).toStrictEqual(messages);
    // The record form (ext 4) spells out lc, type and the module path of every message.
    const recordForm = encode(messages.map((m) => new ExtData(4, encode(m.toJSON()))));
    expect(data.byteLength).toBeLessThan(recordForm.byteLength - 3 * 60);
  });

  it("still reads messages stored in the record form (extension 4)", async () => {
    const message = new AIMessage({ content: "old", tool_calls: [{ name: "f", args: {}, id: "c" }] });
    const stored = encode([new ExtData(4, encode(message.toJSON()))]);
    expect(await serde.loadsTyped("msgpack", stored)).toStrictEqual([message]);
  });

  it("keeps a compact message naming a class outside the allowlist as inert data", async () => {
    const stored = encode(new ExtData(10, encode(["ChildProcess", { cmd: "touch /tmp/pwned" }])));
    expect(await serde.loadsTyped("msgpack", stored)).toEqual({
      lc: 1,
      type: "constructor",
      id: ["langchain_core", "messages", "ChildProcess"],
      kwargs: { cmd: "touch /tmp/pwned" },
    });
  });

  it("reads values written by LangGraph's default JSON serializer", async () => {
    const json = new JsonPlusSerializer();
    const value = { messages: [new HumanMessage("hello")], set: new Set([1]), count: 3 };
    const [type, data] = await json.dumpsTyped(value);
    expect(type).toBe("json");
    const back = (await serde.loadsTyped(type, data)) as typeof value;
    expect(back.messages[0]).toBeInstanceOf(HumanMessage);
    expect(back.set).toEqual(new Set([1]));
    expect(back.count).toBe(3);
  });

  it("keeps an lc record naming an arbitrary module as inert data", async () => {
    const hostile = { lc: 1, type: "constructor", id: ["child_process", "exec"], kwargs: { cmd: "touch /tmp/pwned" } };
    // Written as our LangChain extension, as an attacker with table access could.
    const lcExtension = encode(new ExtData(4, encode(hostile)));
    expect(await serde.loadsTyped("msgpack", lcExtension)).toEqual(hostile);
    const disguised = { ...hostile, id: ["langchain_core", "messages", "constructor"] };
    expect(await serde.loadsTyped("msgpack", encode(new ExtData(4, encode(disguised))))).toEqual(disguised);
  });

  it("loads unknown extension codes as inert ExtData", async () => {
    const back = await serde.loadsTyped("msgpack", encode({ x: new ExtData(99, new Uint8Array([1, 2])) }));
    expect((back as { x: unknown }).x).toBeInstanceOf(ExtData);
  });

  it("rejects truncated data and unknown types with a clear error", async () => {
    const [, data] = await serde.dumpsTyped({ text: "a".repeat(100) });
    await expect(serde.loadsTyped("msgpack", data.subarray(0, 20))).rejects.toThrow(SerializationError);
    await expect(serde.loadsTyped("pickle", data)).rejects.toThrow(/unknown serialization type/);
  });

  it("stores an object with toJSON as what toJSON returns, as LangGraph's JSON serializer does", async () => {
    class Money {
      readonly currency = "EUR";
      private readonly cents: number;
      readonly format = () => `${this.cents / 100} ${this.currency}`;
      constructor(cents: number) {
        this.cents = cents;
      }
      toJSON() {
        return { amount: this.cents / 100, currency: this.currency };
      }
    }
    class Slug {
      constructor(readonly text: string) {}
      toJSON() {
        return this.text.toLowerCase();
      }
    }
    const json = new JsonPlusSerializer();
    const value = {
      // LangGraph's own Overwrite: its toJSON leaves out the class marker.
      total: new Overwrite(7),
      price: new Money(1250),
      tags: [new Slug("Hello"), new Slug("World")],
      when: new Date("2024-05-06T07:08:09.123Z"),
      bytes: Buffer.from([1, 2, 3]),
      message: new HumanMessage({ id: "m1", content: "hi" }),
    };
    const back = (await roundTrip(value)) as Record<string, unknown>;
    const reference = (await json.loadsTyped(...(await json.dumpsTyped(value)))) as Record<string, unknown>;
    for (const key of ["total", "price", "tags"]) expect(back[key]).toStrictEqual(reference[key]);
    expect(back.total).toStrictEqual({ __overwrite__: 7 });
    expect(back.price).toStrictEqual({ amount: 12.5, currency: "EUR" });
    expect(back.tags).toStrictEqual(["hello", "world"]);
    // toJSON applies once, as in JSON.stringify: returning itself keeps the fields, returning undefined drops it.
    class Itself {
      readonly kept = 1;
      toJSON() {
        return this;
      }
    }
    class Nothing {
      toJSON() {
        return undefined;
      }
    }
    const odd = (await roundTrip({ itself: new Itself(), nothing: new Nothing(), list: [new Nothing()] })) as Record<
      string,
      unknown
    >;
    expect(odd).toStrictEqual({ itself: { kept: 1 }, nothing: undefined, list: [undefined] });
    // What JSON loses keeps its own encoding: a Date, bytes, a message instance.
    expect(back.when).toStrictEqual(value.when);
    expect(back.bytes).toStrictEqual(new Uint8Array([1, 2, 3]));
    expect(back.message).toBeInstanceOf(HumanMessage);
  });

  it("refuses values it cannot encode", async () => {
    await expect(serde.dumpsTyped({ fn: () => 1 })).rejects.toThrow(SerializationError);
    await expect(serde.dumpsTyped({ sym: Symbol("s") })).rejects.toThrow(SerializationError);
  });

  it("refuses a header declaring more elements than the data holds, before allocating them", async () => {
    // 32 nested array32 headers of 2^25 elements each: the decoder used to allocate them
    // all before reading one (a heap abort no try can catch).
    const bomb = new Uint8Array(32 * 5 + 1);
    for (let i = 0; i < 32; i++) bomb.set([0xdd, 0x02, 0x00, 0x00, 0x00], i * 5);
    await expect(serde.loadsTyped("msgpack", bomb)).rejects.toThrow(SerializationError);
    await expect(serde.loadsTyped("msgpack", bomb)).rejects.toThrow(/more than the data holds/);
    // Each header alone fits, together they do not: elements owed by outer arrays count.
    const owed = new Uint8Array([0x92, 0xdc, 0x00, 0x03, 0x01, 0x01, 0x01]);
    await expect(serde.loadsTyped("msgpack", owed)).rejects.toThrow(/more than the data holds/);
    const cases = [
      [0xdf, 0x00, 0x10, 0x00, 0x00, 0xc0], // map32 of 2^20 entries
      [0xdb, 0x7f, 0xff, 0xff, 0xff, 0x61], // str32 of 2 GiB
      [0xc9, 0x7f, 0xff, 0xff, 0xff, 0x02], // ext32 of 2 GiB
    ];
    for (const bytes of cases) {
      await expect(serde.loadsTyped("msgpack", new Uint8Array(bytes))).rejects.toThrow(SerializationError);
    }
    // The same inside the payload of a Map extension, which is decoded by a nested decoder.
    const inner = encode(new ExtData(2, bomb));
    await expect(serde.loadsTyped("msgpack", encode({ a: new ExtData(3, inner) }))).rejects.toThrow(
      /more than the data holds/,
    );
    // An extension's payload is a document of its own: what follows it in the row does not count.
    const owedPastPayload = new Uint8Array([0xdd, 0x00, 0x00, 0x10, 0x00]); // 4096 elements, none present
    const followed = encode([new ExtData(3, owedPastPayload), "x".repeat(5000)]);
    await expect(serde.loadsTyped("msgpack", followed)).rejects.toThrow(/more than the data holds/);
  });

  it("reads and writes values nested up to the documented depth, and refuses deeper ones", async () => {
    // Each Map is an extension (one level) holding an array of [key, value] pairs (two levels).
    const nestedMaps = (maps: number, inner: unknown) => {
      let value = inner;
      for (let i = 0; i < maps; i++) value = new Map([["k", value]]);
      return value;
    };
    const maps = Math.floor((MAX_NESTING_DEPTH - 1) / 3);
    const atLimit = nestedMaps(maps, [1]);
    expect(await roundTrip(atLimit)).toStrictEqual(atLimit);
    await expect(serde.dumpsTyped(nestedMaps(maps, [[1]]))).rejects.toThrow(/nested deeper than/);
    // Crafted rows deeper than the limit: plain arrays, and extensions inside extensions.
    const arrays = (depth: number) => new Uint8Array([...new Array(depth).fill(0x91), 0x01]);
    expect(await serde.loadsTyped("msgpack", arrays(MAX_NESTING_DEPTH))).toBeInstanceOf(Array);
    await expect(serde.loadsTyped("msgpack", arrays(MAX_NESTING_DEPTH + 1))).rejects.toThrow(/nested deeper than/);
    let extensions: Uint8Array = encode(null);
    for (let i = 0; i <= MAX_NESTING_DEPTH; i++) extensions = encode(new ExtData(3, extensions));
    await expect(serde.loadsTyped("msgpack", extensions)).rejects.toThrow(/nested deeper than/);
  });

  it("writes plain arrays and objects nested up to the documented depth, not only extensions", async () => {
    // The MessagePack encoder has a bound of its own (100 levels by default), below ours.
    const arrays = (depth: number) => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i++) value = [value];
      return value;
    };
    const objects = (depth: number) => {
      let value: unknown = "leaf";
      for (let i = 0; i < depth; i++) value = { a: value };
      return value;
    };
    for (const depth of [101, MAX_NESTING_DEPTH]) {
      expect(await roundTrip(arrays(depth))).toStrictEqual(arrays(depth));
      expect(await roundTrip(objects(depth))).toStrictEqual(objects(depth));
    }
    await expect(serde.dumpsTyped(arrays(MAX_NESTING_DEPTH + 1))).rejects.toThrow(/nested deeper than/);
    await expect(serde.dumpsTyped(objects(MAX_NESTING_DEPTH + 1))).rejects.toThrow(/nested deeper than/);
  });

  it("bounds the nesting of LangGraph's JSON format the same way", async () => {
    const nested = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;
    expect(await serde.loadsTyped("json", nested(MAX_NESTING_DEPTH))).toBeInstanceOf(Array);
    await expect(serde.loadsTyped("json", nested(MAX_NESTING_DEPTH + 1))).rejects.toThrow(SerializationError);
    await expect(serde.loadsTyped("json", `{"a":${nested(100_000)}}`)).rejects.toThrow(/nested deeper than/);
    // Brackets inside strings are text, not nesting.
    const text = JSON.stringify({ s: `${"[".repeat(5000)}\\"{` });
    expect(await serde.loadsTyped("json", text)).toEqual(JSON.parse(text));
    await expect(serde.loadsTyped("json", "{not json")).rejects.toThrow(SerializationError);
  });

  it("decodes any byte string to a value or a SerializationError", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 64 }), async (bytes) => {
        try {
          await serde.loadsTyped("msgpack", bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(SerializationError);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
