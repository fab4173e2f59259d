import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { ExtData, encode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { MsgpackSerializer, SerializationError } from "../../src/index.js";

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

  it("refuses values it cannot encode", async () => {
    await expect(serde.dumpsTyped({ fn: () => 1 })).rejects.toThrow(SerializationError);
    await expect(serde.dumpsTyped({ sym: Symbol("s") })).rejects.toThrow(SerializationError);
  });
});
