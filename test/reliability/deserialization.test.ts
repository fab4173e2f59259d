import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type CheckpointTuple, uuid6 } from "@langchain/langgraph-checkpoint";
import { ExtData, encode } from "@msgpack/msgpack";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DrizzleSaver, MsgpackSerializer, SerializationError } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { checkpointOf, openRaw, type RawDb, report } from "./helpers.js";

/**
 * Rows written by an attacker who can write to the tables (not through the saver):
 * they must be refused with a clear error or loaded as inert data. Loading never
 * runs code, loads a module, reads a secret or pollutes Object.prototype.
 */

const LC_EXTENSION = 4; // MsgpackSerializer's extension code for LangChain objects
const SECRET_NAME = "LGCD_RELIABILITY_SECRET";
const SECRET_VALUE = "s3cr3t-value-that-must-not-appear";

const marker = join(mkdtempSync(join(tmpdir(), "lgcd-rel-pwned-")), "pwned");
const command = `touch ${marker}`;

const text = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const lcExt = (record: unknown) => encode(new ExtData(LC_EXTENSION, encode(record)));

/** Constructor records naming code to run: modules, globals, paths out of the LangChain namespace. */
const CONSTRUCTORS = [
  { lc: 1, type: "constructor", id: ["child_process", "execSync"], kwargs: { command } },
  { lc: 1, type: "constructor", id: ["node:child_process", "exec"], kwargs: { command } },
  { lc: 1, type: "constructor", id: ["fs", "writeFileSync"], kwargs: { file: marker, data: "x" } },
  { lc: 1, type: "constructor", id: ["langchain_core", "..", "..", "child_process", "execSync"], kwargs: { command } },
  { lc: 1, type: "constructor", id: ["langchain_core", "messages", "constructor"], kwargs: { command } },
  { lc: 1, type: "constructor", id: ["langchain_core", "messages", "__proto__"], kwargs: { command } },
  {
    lc: 2,
    type: "constructor",
    id: ["Function"],
    method: null,
    args: [`require("child_process").execSync("${command}")`],
  },
  { lc: 2, type: "constructor", id: ["eval"], method: null, args: [`process.exit(7)`] },
];

/**
 * True when the value is inert data: no function and no class instance anywhere (a plain object may
 * have another plain object as prototype, as JSON.parse-style revivers make of a "__proto__" key).
 * Deeper than 50 levels counts as data: no class is built by nesting alone.
 */
function plainData(value: unknown, depth = 0): boolean {
  if (typeof value === "function") return false;
  if (depth > 50 || value === null || typeof value !== "object") return true;
  if (value instanceof Uint8Array || value instanceof ExtData) return true;
  const proto = Object.getPrototypeOf(value);
  const plainProto =
    proto === null ||
    proto === Object.prototype ||
    proto === Array.prototype ||
    (Object.getPrototypeOf(proto) === Object.prototype && plainData(proto, depth + 1));
  return plainProto && Object.keys(value).every((key) => plainData((value as Record<string, unknown>)[key], depth + 1));
}

/** JSON of an outcome, or a marker when it is too deep to print (it is then checked for functions only). */
function printable(outcome: unknown): string {
  try {
    return JSON.stringify(outcome) ?? "";
  } catch {
    return "(too deep to print)";
  }
}

type Outcome = { kind: "refused"; message: string } | { kind: "loaded"; value: unknown };

async function outcomeOf(load: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { kind: "loaded", value: await load() };
  } catch (error) {
    return { kind: "refused", message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
  }
}

describe.each(DIALECTS)("rows crafted by an attacker on %s", (dialect: DialectName) => {
  let saver: DrizzleSaver;
  let url: string;
  let raw: RawDb;
  let threads = 0;
  const figures = { rowsCrafted: 0, refused: 0, inert: 0, instantiatedNonMessageClass: 0, executed: 0 };

  beforeAll(async () => {
    ({ saver, url } = await freshSaver(dialect));
    raw = await openRaw(dialect, url);
    process.env[SECRET_NAME] = SECRET_VALUE;
  });
  afterAll(async () => {
    delete process.env[SECRET_NAME];
    report("rows crafted by an attacker", dialect, { ...figures, markerFileCreated: existsSync(marker) });
    await raw.close();
    await saver.close();
    if (dialect === DIALECTS[DIALECTS.length - 1]) rmSync(dirname(marker), { recursive: true, force: true });
  });

  /** A checkpoint whose channel "evil" has no stored value yet; returns what to read it with. */
  async function checkpointReferring() {
    const threadId = `evil-${++threads}`;
    const version = String(saver.getNextVersion(undefined));
    const config = await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: "" } },
      checkpointOf(uuid6(-1), { evil: "placeholder" }, { evil: version }),
      { source: "input", step: -1, parents: {} },
      {}, // the put writes no blob: the attacker's row will be the value
    );
    return { threadId, version, config, checkpointId: config.configurable?.checkpoint_id as string };
  }

  /** Inserts the value of channel "evil" as a blob row; returns the channel value as the saver loads it. */
  async function craftedBlob(type: string, blob: Uint8Array): Promise<Outcome> {
    const { threadId, version, config } = await checkpointReferring();
    await raw.insertBlob({ threadId, channel: "evil", version, type, blob });
    figures.rowsCrafted += 1;
    return outcomeOf(async () => ((await saver.getTuple(config)) as CheckpointTuple).checkpoint.channel_values.evil);
  }

  /** Inserts a pending write row; returns its value as the saver loads it. */
  async function craftedWrite(type: string, blob: Uint8Array): Promise<Outcome> {
    const { threadId, checkpointId, config } = await checkpointReferring();
    await raw.insertWrite({ threadId, checkpointId, taskId: "evil-task", idx: 0, channel: "evil", type, blob });
    figures.rowsCrafted += 1;
    return outcomeOf(async () => ((await saver.getTuple(config)) as CheckpointTuple).pendingWrites?.[0]?.[2]);
  }

  /** Overwrites the serialized checkpoint of a row; returns the checkpoint as the saver loads it. */
  async function craftedCheckpoint(type: string, checkpoint: Uint8Array): Promise<Outcome> {
    const { threadId, checkpointId, config } = await checkpointReferring();
    await raw.updateCheckpoint({ threadId, checkpointId }, { type, checkpoint });
    figures.rowsCrafted += 1;
    return outcomeOf(async () => (await saver.getTuple(config))?.checkpoint);
  }

  /** Each crafted value in each place a serialized value is read from. */
  async function everywhere(type: string, bytes: Uint8Array): Promise<Outcome[]> {
    return [await craftedBlob(type, bytes), await craftedWrite(type, bytes), await craftedCheckpoint(type, bytes)];
  }

  function count(outcome: Outcome) {
    if (outcome.kind === "refused") figures.refused += 1;
    else figures.inert += 1;
  }

  /** Refused with a message, or loaded as plain data; and nothing ran. */
  function expectHarmless(outcomes: Outcome[], label: string) {
    for (const outcome of outcomes) {
      count(outcome);
      if (outcome.kind === "refused") expect(outcome.message.length, label).toBeGreaterThan(10);
      else expect(plainData(outcome.value), `${label}: loaded as ${printable(outcome.value).slice(0, 200)}`).toBe(true);
    }
    if (existsSync(marker)) figures.executed += 1;
    expect(existsSync(marker), `${label} ran a command`).toBe(false);
    expect(({} as Record<string, unknown>).polluted, `${label} polluted Object.prototype`).toBeUndefined();
  }

  it("LangChain constructor records naming modules or globals, as msgpack extensions, load as inert data", async () => {
    for (const record of CONSTRUCTORS) {
      const outcomes = await everywhere("msgpack", lcExt(record));
      expectHarmless(outcomes, JSON.stringify(record.id));
      // In a blob or a write, the record comes back as exactly the data it is.
      for (const outcome of outcomes.slice(0, 2)) expect(outcome).toEqual({ kind: "loaded", value: record });
    }
  });

  it("the same records in LangGraph's JSON format are refused or inert", async () => {
    for (const record of CONSTRUCTORS) expectHarmless(await everywhere("json", text(record)), `json ${record.id}`);
    // Nested inside a message the saver does revive.
    const nested = {
      lc: 1,
      type: "constructor",
      id: ["langchain_core", "messages", "HumanMessage"],
      kwargs: { content: "hi", additional_kwargs: { payload: CONSTRUCTORS[0] } },
    };
    for (const outcome of await everywhere("json", text(nested))) {
      count(outcome);
      expect(existsSync(marker)).toBe(false);
    }
  });

  it("a JSON row naming a LangChain class other than a message is not instantiated", async () => {
    // docs/storage-model.md: "only the listed message classes are ever instantiated". A prompt template, a runnable or a
    // tracer built from attacker kwargs is code running on attacker data.
    const classes = [
      ["langchain_core", "prompts", "prompt", "PromptTemplate"],
      ["langchain_core", "prompts", "chat", "ChatPromptTemplate"],
      ["langchain_core", "runnables", "RunnablePassthrough"],
    ];
    const instantiated: string[] = [];
    for (const id of classes) {
      const record = { lc: 1, type: "constructor", id, kwargs: { template: "{x}", input_variables: ["x"] } };
      for (const [place, outcome] of (await everywhere("json", text(record))).entries()) {
        if (outcome.kind === "loaded" && !plainData(outcome.value)) {
          figures.instantiatedNonMessageClass += 1;
          instantiated.push(`${id.at(-1)} in ${["a blob", "a write", "the checkpoint"][place]}`);
        } else count(outcome);
      }
    }
    expect(instantiated).toEqual([]);
  });

  it("a secret record does not read the environment", async () => {
    const secret = { lc: 1, type: "secret", id: [SECRET_NAME] };
    const message = {
      lc: 1,
      type: "constructor",
      id: ["langchain_core", "messages", "HumanMessage"],
      kwargs: { content: secret },
    };
    // A message is revived (docs/storage-model.md), so the check is that no loaded value holds the secret.
    const outcomes = [
      ...(await everywhere("json", text(message))),
      ...(await everywhere("json", text({ secret }))),
      ...(await everywhere("json", text(secret))),
      ...(await everywhere("msgpack", lcExt(message))),
      ...(await everywhere("msgpack", lcExt(secret))),
    ];
    for (const outcome of outcomes) {
      count(outcome);
      expect(printable(outcome)).not.toContain(SECRET_VALUE);
    }
  });

  it("unknown msgpack extension codes load as inert data", async () => {
    for (const code of [0, 9, 42, 99, 127, -2, -128]) {
      const outcomes = await everywhere("msgpack", encode({ x: new ExtData(code, new Uint8Array([1, 2, 3])) }));
      expectHarmless(outcomes, `extension ${code}`);
      const [blob] = outcomes;
      if (blob.kind === "loaded") expect((blob.value as { x: unknown }).x).toBeInstanceOf(ExtData);
    }
  });

  it("malformed extension payloads, truncated and oversized data are refused with a clear error", async () => {
    const serde = new MsgpackSerializer();
    const [, valid] = await serde.dumpsTyped({ text: "a".repeat(200), list: [1, 2, 3] });
    const cases: [string, Uint8Array][] = [
      ["truncated", valid.subarray(0, valid.length - 50)],
      ["one byte", new Uint8Array([0xdc])],
      ["empty", new Uint8Array(0)],
      ["bin32 claiming 4 GiB", new Uint8Array([0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3])],
      ["array32 claiming 4 billion items", new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0])],
      ["map extension holding a number", encode(new ExtData(2, encode(5)))],
      ["regexp extension with an invalid pattern", encode(new ExtData(6, encode(["(", "g"])))],
      ["bigint extension holding letters", encode(new ExtData(7, new TextEncoder().encode("abc")))],
      ["reserved byte 0xc1", new Uint8Array([0xc1])],
    ];
    const unclear: string[] = [];
    for (const [label, bytes] of cases) {
      for (const [place, outcome] of (await everywhere("msgpack", bytes)).entries()) {
        count(outcome);
        const where = `${label} in ${["a blob", "a write", "the checkpoint"][place]}`;
        if (outcome.kind !== "refused") unclear.push(`${where}: loaded as ${JSON.stringify(outcome.value)}`);
        else if (!/SerializationError|cannot decode/i.test(outcome.message))
          unclear.push(`${where}: ${outcome.message}`);
      }
    }
    expect(unclear).toEqual([]);
    // The damage stays in those rows: a healthy thread next to them still loads.
    const healthy = await saver.put(
      { configurable: { thread_id: "healthy" } },
      checkpointOf(uuid6(-1), { ok: 1 }, { ok: "1" }),
      { source: "input", step: -1, parents: {} },
      { ok: "1" },
    );
    expect((await saver.getTuple(healthy))?.checkpoint.channel_values).toEqual({ ok: 1 });
  });

  it("a 161-byte array bomb fails only the read that meets it, with an error naming the row", async () => {
    // 32 nested array32 headers declaring 2^25 elements each: decoding used to allocate
    // them before reading any element and abort the process (heap limit).
    const bomb = new Uint8Array(32 * 5 + 1);
    for (let i = 0; i < 32; i++) bomb.set([0xdd, 0x02, 0x00, 0x00, 0x00], i * 5);
    const inBlob = await checkpointReferring();
    await raw.insertBlob({ ...inBlob, channel: "evil", type: "msgpack", blob: bomb });
    const inWrite = await checkpointReferring();
    await raw.insertWrite({ ...inWrite, taskId: "evil-task", idx: 0, channel: "evil", type: "msgpack", blob: bomb });
    const inCheckpoint = await checkpointReferring();
    await raw.updateCheckpoint(inCheckpoint, { type: "msgpack", checkpoint: bomb });
    figures.rowsCrafted += 3;
    const named = (thread: string, checkpoint: string, what: string) =>
      new RegExp(`${what} of thread "${thread}", namespace "", checkpoint "${checkpoint}"`);
    const cases = [
      [inBlob, 'the value of channel "evil"'],
      [inWrite, 'the pending write of task "evil-task" to channel "evil"'],
      [inCheckpoint, "the checkpoint"],
    ] as const;
    for (const [place, what] of cases) {
      const read = saver.getTuple(place.config);
      await expect(read).rejects.toThrow(SerializationError);
      await expect(read).rejects.toThrow(named(place.threadId, place.checkpointId, what));
      await expect(read).rejects.toThrow(/more than the data holds/);
      figures.refused += 1;
    }
    // A cross-thread list meets the rows: it fails the same way, the process lives on.
    const listAll = async () => {
      for await (const _ of saver.list({})) {
      }
    };
    await expect(listAll()).rejects.toThrow(SerializationError);
    // Every other thread stays readable.
    const healthy = await saver.put(
      { configurable: { thread_id: "healthy-after-bomb" } },
      checkpointOf(uuid6(-1), { ok: 2 }, { ok: "1" }),
      { source: "input", step: -1, parents: {} },
      { ok: "1" },
    );
    expect((await saver.getTuple(healthy))?.checkpoint.channel_values).toEqual({ ok: 2 });
    const listed = [];
    for await (const tuple of saver.list({ configurable: { thread_id: "healthy-after-bomb" } })) listed.push(tuple);
    expect(listed).toHaveLength(1);
  });

  it("deeply nested data neither crashes the process nor runs anything", async () => {
    let nestedExt: Uint8Array = encode(null);
    for (let i = 0; i < 20_000; i++) nestedExt = encode(new ExtData(LC_EXTENSION, nestedExt));
    const deepArray = new Uint8Array(200_001).fill(0x91);
    deepArray[200_000] = 0xc0;
    for (const [label, bytes] of [
      ["20 000 nested extensions", nestedExt],
      ["200 000 nested arrays", deepArray],
    ] as const) {
      expectHarmless(await everywhere("msgpack", bytes), label);
    }
  });

  it("unknown type column values are refused with a clear error", async () => {
    for (const type of ["pickle", "", "MSGPACK", "json ", "eval", "__proto__"]) {
      for (const outcome of await everywhere(type, encode({ a: 1 }))) {
        count(outcome);
        expect(outcome.kind, `type ${JSON.stringify(type)}`).toBe("refused");
        if (outcome.kind === "refused") expect(outcome.message).toMatch(/unknown serialization type/i);
      }
    }
  });

  it("__proto__ keys in stored values do not pollute Object.prototype", async () => {
    const polluting = new Uint8Array([
      0x81, // map of one entry
      0xa9,
      ...new TextEncoder().encode("__proto__"),
      0x81,
      0xa8,
      ...new TextEncoder().encode("polluted"),
      0xc3, // true
    ]);
    expectHarmless(await everywhere("msgpack", polluting), "msgpack __proto__");
    expectHarmless(await everywhere("json", text(JSON.parse('{"__proto__":{"polluted":true}}'))), "json __proto__");
  });

  it("crafted metadata loads as data: its __proto__ key neither pollutes nor replaces the prototype", async () => {
    const { threadId, checkpointId, config } = await checkpointReferring();
    await raw.updateCheckpoint(
      { threadId, checkpointId },
      { metadata: '{"__proto__":{"polluted":"yes","source":"spoofed"},"step":1,"parents":{}}' },
    );
    figures.rowsCrafted += 1;
    const metadata = (await saver.getTuple(config))?.metadata as Record<string, unknown>;
    figures.inert += 1;
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype);
    expect(metadata.source).toBeUndefined(); // not inherited from the attacker's object
    expect(Object.getOwnPropertyDescriptor(metadata, "__proto__")?.value).toEqual({
      polluted: "yes",
      source: "spoofed",
    });
  });
});
