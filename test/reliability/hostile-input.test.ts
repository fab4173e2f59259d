import { randomBytes } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
  uuid6,
} from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DrizzleSaver, InvalidInputError } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { checkpointOf, openRaw, type RawDb, type RowCounts, report, sha256 } from "./helpers.js";

/**
 * Input an attacker or a buggy caller may send: SQL-shaped strings everywhere a
 * string goes, characters databases handle badly, Object.prototype names, huge ids
 * and values, and wrong types. Data must round-trip exactly (and match filters
 * exactly); what cannot be stored must be refused with a clear error, writing nothing.
 */

const HOSTILE = [
  "'; drop table checkpoints; --",
  '"; drop table checkpoint_blobs; --',
  "`; drop table checkpoint_writes; --",
  "Robert'); DROP TABLE checkpoints;--",
  "' or '1'='1",
  "') or 1=1 --",
  '" or ""="',
  "` or 1=1 #",
  "$1",
  "$2::text",
  "$$ dollar $$",
  "?",
  "??",
  ":name",
  "@var",
  "%s",
  "%",
  "_",
  "\\",
  "\\'",
  '\\"',
  "\\0",
  "\\x00",
  "/* comment */",
  "-- comment",
  "#",
  ";",
  "$.a",
  "$[0]",
  "a.b",
  'a"b',
  "a'b",
  "a`b",
  "*",
  '{"a":1}',
  "[1,2]",
  "null",
  "true",
  "0",
  "1e309",
  "select * from checkpoints",
  "1; select pg_sleep(5)",
  "1 and sleep(5)",
  "benchmark(10000000,md5(1))",
  "union select null,null,null",
  "\t\n\r",
  "  padded  ",
  "é",
  "😀",
  "日本語",
  "\u202e right-to-left",
  "\ufeff bom",
];

const META: CheckpointMetadata = { source: "input", step: -1, parents: {} };

function version(saver: DrizzleSaver): string {
  return String(saver.getNextVersion(undefined));
}

/** A checkpoint holding `values`, every channel at a new version, all of them written by the put. */
function checkpointWith(saver: DrizzleSaver, values: Record<string, unknown>, id = uuid6(-1)) {
  const versions = Object.fromEntries(Object.keys(values).map((channel) => [channel, version(saver)]));
  return { checkpoint: checkpointOf(id, values, versions), versions };
}

async function all(iterable: AsyncIterable<CheckpointTuple>): Promise<CheckpointTuple[]> {
  const items: CheckpointTuple[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** Runs a call that must be refused; returns a problem description, or undefined when it was refused cleanly. */
async function refused(
  raw: RawDb,
  call: () => Promise<unknown>,
  pattern: RegExp,
  options: { anyError?: boolean } = {},
): Promise<string | undefined> {
  const before: RowCounts = await raw.counts();
  let problem: string | undefined;
  try {
    await call();
    problem = "accepted";
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if (!options.anyError && !(error instanceof InvalidInputError))
      problem = `not an InvalidInputError: ${message.slice(0, 200)}`;
    else if (!pattern.test(message)) problem = `unclear error: ${message.slice(0, 200)}`;
  }
  const after = await raw.counts();
  if (JSON.stringify(after) !== JSON.stringify(before)) {
    problem = `${problem ?? "refused"} but wrote rows: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`;
  }
  return problem;
}

describe.each(DIALECTS)("hostile and odd input on %s", (dialect: DialectName) => {
  let saver: DrizzleSaver;
  let url: string;
  let raw: RawDb;
  beforeAll(async () => {
    ({ saver, url } = await freshSaver(dialect));
    raw = await openRaw(dialect, url);
  });
  afterAll(async () => {
    await raw.close();
    await saver.close();
  });

  it("SQL-shaped thread ids, namespaces, channels, task ids, metadata and filters are plain data", async () => {
    const problems: string[] = [];
    const before = await raw.counts();
    for (const [i, s] of HOSTILE.entries()) {
      const { checkpoint, versions } = checkpointWith(saver, { [s]: { text: s }, plain: i });
      const metadata = { ...META, step: i, [s]: s, nested: { [s]: [s] } } as CheckpointMetadata;
      const config = await saver.put(
        { configurable: { thread_id: s, checkpoint_ns: s } },
        checkpoint,
        metadata,
        versions,
      );
      await saver.putWrites(
        config,
        [
          [s, s],
          ["plain", i],
        ],
        s,
        s,
      );
      const tuple = await saver.getTuple({ configurable: { thread_id: s, checkpoint_ns: s } });
      const label = JSON.stringify(s);
      if (!tuple) {
        problems.push(`${label}: not found`);
        continue;
      }
      if (tuple.config.configurable?.thread_id !== s || tuple.config.configurable?.checkpoint_ns !== s) {
        problems.push(`${label}: ids changed to ${JSON.stringify(tuple.config.configurable)}`);
      }
      if (JSON.stringify(tuple.checkpoint.channel_values) !== JSON.stringify({ [s]: { text: s }, plain: i })) {
        problems.push(`${label}: channel values ${JSON.stringify(tuple.checkpoint.channel_values)}`);
      }
      if (JSON.stringify(tuple.metadata) !== JSON.stringify(metadata) && !deepEqual(tuple.metadata, metadata)) {
        problems.push(`${label}: metadata ${JSON.stringify(tuple.metadata)}`);
      }
      if (
        !deepEqual(tuple.pendingWrites, [
          [s, s, s],
          [s, "plain", i],
        ])
      ) {
        problems.push(`${label}: pending writes ${JSON.stringify(tuple.pendingWrites)}`);
      }
      const inThread = await all(saver.list({ configurable: { thread_id: s } }));
      if (inThread.length !== 1) problems.push(`${label}: ${inThread.length} checkpoints in its thread`);
      // The string as a filter key and value matches exactly its own checkpoint, across all threads.
      for (const filter of [{ [s]: s }, { nested: { [s]: [s] } }]) {
        const found = await all(saver.list({}, { filter }));
        if (found.length !== 1 || found[0].config.configurable?.thread_id !== s) {
          problems.push(`${label}: filter ${JSON.stringify(filter)} found ${found.length}`);
        }
      }
      // As a value of a key nobody has that value for, it matches nothing (no widening).
      const none = await all(saver.list({}, { filter: { source: s } }));
      if (none.length !== 0) problems.push(`${label}: filter {source: ${label}} found ${none.length}`);
    }
    const after = await raw.counts();
    expect(problems).toEqual([]);
    // The tables are intact and hold exactly what was written.
    expect(after.checkpoints - before.checkpoints).toBe(HOSTILE.length);
    expect(after.blobs - before.blobs).toBe(HOSTILE.length * 2);
    expect(after.writes - before.writes).toBe(HOSTILE.length * 2);
    report("SQL-shaped strings", dialect, {
      strings: HOSTILE.length,
      usedAs: [
        "thread_id",
        "checkpoint_ns",
        "channel",
        "task id",
        "task path",
        "metadata key",
        "metadata value",
        "filter key",
        "filter value",
      ],
      filterQueries: HOSTILE.length * 3,
      lost: problems.length,
    });
  });

  it("ids that differ only by trailing spaces stay apart", async () => {
    const problems: string[] = [];
    const ids = ["pad", "pad ", "pad  "];
    for (const [i, id] of ids.entries()) {
      const { checkpoint, versions } = checkpointWith(saver, { [id]: i }, `ckpt-${id}`);
      const config = await saver.put({ configurable: { thread_id: id } }, checkpoint, { ...META, step: i }, versions);
      await saver.putWrites(config, [[id, i]], id);
      // The same checkpoint id and task id, differing by a trailing space, in one thread.
      const shared = checkpointWith(saver, { [id]: i }, `ckpt-${id}`);
      const sharedConfig = await saver.put(
        { configurable: { thread_id: "pad-shared" } },
        shared.checkpoint,
        META,
        shared.versions,
      );
      await saver.putWrites(sharedConfig, [["x", i]], `task-${id}`);
    }
    for (const [i, id] of ids.entries()) {
      const tuple = await saver.getTuple({ configurable: { thread_id: id } });
      if (tuple?.config.configurable?.thread_id !== id) {
        problems.push(
          `thread ${JSON.stringify(id)} reads back as ${JSON.stringify(tuple?.config.configurable?.thread_id)}`,
        );
      }
      if (!deepEqual(tuple?.checkpoint.channel_values, { [id]: i })) {
        problems.push(`thread ${JSON.stringify(id)}: values ${JSON.stringify(tuple?.checkpoint.channel_values)}`);
      }
      if (!deepEqual(tuple?.pendingWrites, [[id, id, i]])) {
        problems.push(`thread ${JSON.stringify(id)}: writes ${JSON.stringify(tuple?.pendingWrites)}`);
      }
      const shared = await saver.getTuple({ configurable: { thread_id: "pad-shared", checkpoint_id: `ckpt-${id}` } });
      if (shared?.checkpoint.id !== `ckpt-${id}` || !deepEqual(shared?.pendingWrites, [[`task-${id}`, "x", i]])) {
        problems.push(
          `checkpoint ${JSON.stringify(`ckpt-${id}`)}: read back ${JSON.stringify(shared?.checkpoint.id)} with writes ${JSON.stringify(shared?.pendingWrites)}`,
        );
      }
    }
    const threads = await all(saver.list({ configurable: { thread_id: "pad-shared" } }));
    if (threads.length !== ids.length)
      problems.push(`pad-shared holds ${threads.length} checkpoints, not ${ids.length}`);
    report("ids differing by trailing spaces", dialect, { ids: ids.length, positions: 4, lost: problems.length });
    expect(problems).toEqual([]);
  });

  it("U+0000 and lone surrogates in metadata and channel values round-trip exactly and filter exactly", async () => {
    const metadata = {
      ...META,
      "a\u0000b": "x\u0000y",
      "\uD800": "\uDC00",
      k: "lone \uD83D end",
      "\uDBFF\uDFFF": "a valid pair",
      nested: { "\u0000": ["\uDFFF", "\u0000", "ok"] },
      "\u{10FFFD}json:": "looks like the escape marker",
    } as CheckpointMetadata;
    const values = {
      text: "nul \u0000 and lone \uD800 and \uDFFF",
      obj: { "\u0000key": "\uDBFF", "\uDC00": ["\u0000"] },
    };
    const { checkpoint, versions } = checkpointWith(saver, values);
    const config = await saver.put({ configurable: { thread_id: "nul-thread" } }, checkpoint, metadata, versions);
    await saver.putWrites(config, [["text", "w\u0000\uD800"]], "task");
    const tuple = await saver.getTuple(config);
    expect(tuple?.metadata).toEqual(metadata);
    expect(Object.keys(tuple?.metadata ?? {}).sort()).toEqual(Object.keys(metadata).sort());
    expect(tuple?.checkpoint.channel_values).toEqual(values);
    expect(tuple?.pendingWrites).toEqual([["task", "text", "w\u0000\uD800"]]);

    const matches: [Record<string, unknown>, number][] = [
      [{ "a\u0000b": "x\u0000y" }, 1],
      [{ "\uD800": "\uDC00" }, 1],
      [{ k: "lone \uD83D end" }, 1],
      [{ "\uDBFF\uDFFF": "a valid pair" }, 1],
      [{ nested: { "\u0000": ["\uDFFF", "\u0000", "ok"] } }, 1],
      [{ "\u{10FFFD}json:": "looks like the escape marker" }, 1],
      // Near misses: the replacement character, a dropped NUL, a different lone surrogate.
      [{ "\uD800": "\uFFFD" }, 0],
      [{ "\uFFFD": "\uDC00" }, 0],
      [{ "a\u0000b": "xy" }, 0],
      [{ ab: "x\u0000y" }, 0],
      [{ k: "lone \uD83E end" }, 0],
      [{ nested: { "\u0000": ["\uDFFE", "\u0000", "ok"] } }, 0],
    ];
    const problems: string[] = [];
    for (const [filter, expected] of matches) {
      const found = await all(saver.list({}, { filter }));
      if (found.length !== expected) problems.push(`${JSON.stringify(filter)} found ${found.length}, not ${expected}`);
    }
    expect(problems).toEqual([]);
    report("U+0000 and lone surrogates in metadata and values", dialect, {
      metadataKeys: Object.keys(metadata).length,
      filtersTried: matches.length,
      lost: problems.length,
    });
  });

  it("U+0000 and lone surrogates in ids, namespaces, channel names and task ids are stored exactly or refused", async () => {
    // "x\uD800" and "x\uDC00" become the same string if a driver replaces lone surrogates with U+FFFD, so
    // each position gets all variants with everything else equal: any collision shows as a lost or wrong row.
    const variants = ["x\uD800", "x\uDC00", "x\u0000", "x\uFFFD"];
    const sameVersion = "00000000000000000000000000000001.0000000000000000";
    const problems: string[] = [];
    const outcomes: Record<string, string> = {};
    const attempt = async (label: string, call: () => Promise<void>): Promise<boolean> => {
      const before = await raw.counts();
      try {
        await call();
        outcomes[label] = "stored";
        return true;
      } catch (error) {
        outcomes[label] = `refused: ${(error as Error).message.split("\n")[0].slice(0, 60)}`;
        if (JSON.stringify(await raw.counts()) !== JSON.stringify(before))
          problems.push(`${label}: refused but wrote rows`);
        return false;
      }
    };
    const put = (thread: string, ns: string, id: string, channel: string, value: number, version = sameVersion) =>
      saver.put(
        { configurable: { thread_id: thread, checkpoint_ns: ns } },
        checkpointOf(id, { [channel]: value }, { [channel]: version }),
        META,
        { [channel]: version },
      );
    const check = async (label: string, config: RunnableConfig, channel: string, value: number) => {
      const tuple = await saver.getTuple(config);
      if (!tuple) return problems.push(`${label}: stored but not found`);
      const { thread_id, checkpoint_ns, checkpoint_id } = tuple.config.configurable ?? {};
      if (!deepEqual({ thread_id, checkpoint_ns, checkpoint_id }, config.configurable)) {
        problems.push(`${label}: read back as ${JSON.stringify({ thread_id, checkpoint_ns, checkpoint_id })}`);
      }
      if (!deepEqual(tuple.checkpoint.channel_values, { [channel]: value })) {
        problems.push(`${label}: values ${JSON.stringify(tuple.checkpoint.channel_values)}`);
      }
    };
    const key = (thread: string, ns: string, id: string) => ({
      configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: id },
    });

    for (const [value, variant] of variants.entries()) {
      const label = (position: string) => `${position} ${JSON.stringify(variant)}`;
      if (await attempt(label("thread_id"), async () => void (await put(variant, "", "same-id", "v", value)))) {
        await check(label("thread_id"), key(variant, "", "same-id"), "v", value);
      }
      if (
        await attempt(label("checkpoint_ns"), async () => void (await put("odd-ns", variant, "same-id", "v", value)))
      ) {
        await check(label("checkpoint_ns"), key("odd-ns", variant, "same-id"), "v", value);
      }
      // (Checkpoints of one thread share blobs by version: each variant gets its own.)
      const ownVersion = `${sameVersion}${value}`;
      if (
        await attempt(
          label("checkpoint id"),
          async () => void (await put("odd-id", "", variant, "v", value, ownVersion)),
        )
      ) {
        await check(label("checkpoint id"), key("odd-id", "", variant), "v", value);
      }
      const channelCheckpoint = `channel-${value}`;
      if (
        await attempt(
          label("channel"),
          async () => void (await put("odd-channel", "", channelCheckpoint, variant, value)),
        )
      ) {
        await check(label("channel"), key("odd-channel", "", channelCheckpoint), variant, value);
      }
    }
    // Task ids: every variant writes to the same checkpoint, at the same index.
    const taskCheckpoint = await put("odd-task", "", "tasks", "v", -1);
    const storedTasks: [string, string, unknown][] = [];
    for (const [value, variant] of variants.entries()) {
      if (
        await attempt(`task id ${JSON.stringify(variant)}`, () =>
          saver.putWrites(taskCheckpoint, [["w", value]], variant),
        )
      ) {
        storedTasks.push([variant, "w", value]);
      }
    }
    const writes = (await saver.getTuple(taskCheckpoint))?.pendingWrites ?? [];
    const sortKey = (w: readonly unknown[]) => JSON.stringify(w);
    if (
      !deepEqual(
        [...writes].sort((x, y) => sortKey(x).localeCompare(sortKey(y))),
        [...storedTasks].sort((x, y) => sortKey(x).localeCompare(sortKey(y))),
      )
    ) {
      problems.push(`task ids: stored ${JSON.stringify(storedTasks)} but read ${JSON.stringify(writes)}`);
    }
    report("U+0000 and lone surrogates in ids", dialect, { outcomes, lost: problems.length });
    expect(problems).toEqual([]);
  });

  it("metadata keys named like Object.prototype members round-trip and filter as data", async () => {
    const metadata = JSON.parse(
      '{"source":"input","step":-1,"parents":{},"__proto__":{"polluted":"yes"},"constructor":"c","toString":"t","hasOwnProperty":1}',
    ) as CheckpointMetadata;
    const { checkpoint, versions } = checkpointWith(saver, { v: 1 });
    const config = await saver.put({ configurable: { thread_id: "proto-meta" } }, checkpoint, metadata, versions);
    const tuple = await saver.getTuple(config);
    const back = tuple?.metadata as Record<string, unknown>;
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.keys(back).sort()).toEqual(Object.keys(metadata).sort());
    expect(Object.getOwnPropertyDescriptor(back, "__proto__")?.value).toEqual({ polluted: "yes" });
    const filter = JSON.parse('{"__proto__":{"polluted":"yes"}}') as Record<string, unknown>;
    expect(await all(saver.list({}, { filter }))).toHaveLength(1);
  });

  it("channel values with a __proto__ key are stored and read back, or refused before anything is written", async () => {
    // JSON.parse of a tool's or a user's output makes such keys: a value LangGraph will put in its state.
    const value = JSON.parse('{"__proto__":{"polluted":"yes"},"a":1}') as Record<string, unknown>;
    const problem = await (async () => {
      const { checkpoint, versions } = checkpointWith(saver, { state: value });
      const before = await raw.counts();
      let config: RunnableConfig;
      try {
        config = await saver.put({ configurable: { thread_id: "proto-value" } }, checkpoint, META, versions);
      } catch (error) {
        const after = await raw.counts();
        return JSON.stringify(after) === JSON.stringify(before) ? undefined : `refused (${error}) but wrote rows`;
      }
      try {
        const tuple = await saver.getTuple(config);
        const back = tuple?.checkpoint.channel_values.state as Record<string, unknown>;
        if (Object.getOwnPropertyDescriptor(back, "__proto__")?.value?.polluted !== "yes" || back.a !== 1) {
          return `read back as ${JSON.stringify(back)}`;
        }
        return undefined;
      } catch (error) {
        return `stored, but the checkpoint can no longer be read: ${(error as Error).message}`;
      }
    })();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    report("__proto__ keys in channel values", dialect, { outcome: problem ?? "round-trips or refused cleanly" });
    expect(problem).toBeUndefined();
  });

  it("ids longer than 255 characters are refused with a clear error and write nothing", async () => {
    const long = "x".repeat(256);
    const huge = "y".repeat(100_000);
    const { checkpoint, versions } = checkpointWith(saver, { v: 1 });
    const base = await saver.put({ configurable: { thread_id: "long-ids" } }, checkpoint, META, versions);
    const cases: [string, () => Promise<unknown>][] = [
      [
        "put thread_id 256",
        () =>
          saver.put({ configurable: { thread_id: long } }, checkpointWith(saver, { v: 1 }).checkpoint, META, versions),
      ],
      [
        "put thread_id 100000",
        () =>
          saver.put({ configurable: { thread_id: huge } }, checkpointWith(saver, { v: 1 }).checkpoint, META, versions),
      ],
      [
        "put 256 astral characters",
        () =>
          saver.put(
            { configurable: { thread_id: "😀".repeat(256) } },
            checkpointWith(saver, { v: 1 }).checkpoint,
            META,
            versions,
          ),
      ],
      [
        "put checkpoint.id 256",
        () =>
          saver.put(
            { configurable: { thread_id: "long-ids" } },
            checkpointWith(saver, { v: 1 }, long).checkpoint,
            META,
            versions,
          ),
      ],
      [
        "put parent checkpoint_id 256",
        () =>
          saver.put(
            { configurable: { thread_id: "long-ids", checkpoint_id: long } },
            checkpointWith(saver, { v: 1 }).checkpoint,
            META,
            versions,
          ),
      ],
      ["putWrites task id 256", () => saver.putWrites(base, [["v", 1]], long)],
      [
        "putWrites checkpoint_id 256",
        () => saver.putWrites({ configurable: { thread_id: "long-ids", checkpoint_id: long } }, [["v", 1]], "task"),
      ],
      [
        "putWrites thread_id 256",
        () => saver.putWrites({ configurable: { thread_id: long, checkpoint_id: "c" } }, [["v", 1]], "task"),
      ],
      ["getTuple thread_id 256", () => saver.getTuple({ configurable: { thread_id: long } })],
      ["list thread_id 256", () => all(saver.list({ configurable: { thread_id: long } }))],
      ["list before 256", () => all(saver.list({}, { before: { configurable: { checkpoint_id: long } } }))],
      ["deleteThread 256", () => saver.deleteThread(long)],
    ];
    const problems: string[] = [];
    for (const [label, call] of cases) {
      const problem = await refused(raw, call, /longer than 255/);
      if (problem) problems.push(`${label}: ${problem}`);
    }
    report("ids longer than 255 characters", dialect, { callsTried: cases.length, lost: problems.length });
    expect(problems).toEqual([]);
  });

  it("ids of 255 four-byte characters, 255-character channel names and a deep namespace round-trip", async () => {
    const id = "😀".repeat(255);
    // Five levels of subgraphs, as LangGraph names them: "node:<task id>|node:<task id>|...".
    const ns = Array.from({ length: 5 }, (_, i) => `subgraph_${i}:${uuid6(-1)}`).join("|");
    const channels = { [id]: "max", ["c".repeat(255)]: "long" };
    const { checkpoint, versions } = checkpointWith(saver, channels, id);
    const config = await saver.put({ configurable: { thread_id: id, checkpoint_ns: ns } }, checkpoint, META, versions);
    // A write's key also holds the task id: what the 2,600-byte key limit (docs/storage-model.md) leaves for it here.
    const taskId = "😀".repeat(Math.floor((2_600 - 2 * Buffer.byteLength(id) - Buffer.byteLength(ns)) / 4));
    await saver.putWrites(config, [[id, "w"]], taskId);
    const tuple = await saver.getTuple({ configurable: { thread_id: id, checkpoint_ns: ns, checkpoint_id: id } });
    expect(tuple?.config.configurable).toEqual({ thread_id: id, checkpoint_ns: ns, checkpoint_id: id });
    expect(tuple?.checkpoint.channel_values).toEqual(channels);
    expect(tuple?.pendingWrites).toEqual([[taskId, id, "w"]]);
    await expect(saver.putWrites(config, [[id, "w"]], id)).rejects.toThrow(/2,600 bytes/);
    report("maximal ids", dialect, {
      idCharacters: 255,
      idBytes: Buffer.byteLength(id),
      namespaceCharacters: ns.length,
      lost: 0,
    });
  });

  it("long namespaces and channel names are stored exactly or refused with nothing written", async () => {
    // Random (incompressible) text: what a database must really index.
    const text = (length: number) => randomBytes(length).toString("base64").slice(0, length);
    const outcomes: Record<string, string> = {};
    const problems: string[] = [];
    let longestNamespace = 0;
    const cases: [string, number, (n: number) => { ns: string; channel: string }][] = [
      ...[1_000, 2_000, 5_000, 20_000, 70_000].map(
        (n): [string, number, (n: number) => { ns: string; channel: string }] => [
          `namespace of ${n}`,
          n,
          (length) => ({ ns: text(length), channel: "v" }),
        ],
      ),
      ["channel of 300", 300, (length) => ({ ns: "", channel: text(length) })],
      ["channel of 5000", 5_000, (length) => ({ ns: "", channel: text(length) })],
    ];
    for (const [label, length, make] of cases) {
      const { ns, channel } = make(length);
      const { checkpoint, versions } = checkpointWith(saver, { [channel]: label });
      const before = await raw.counts();
      try {
        const saved = await saver.put(
          { configurable: { thread_id: `long-${label}`, checkpoint_ns: ns } },
          checkpoint,
          META,
          versions,
        );
        await saver.putWrites(saved, [[channel, label]], "task");
        const tuple = await saver.getTuple(saved);
        if (tuple?.config.configurable?.checkpoint_ns !== ns) problems.push(`${label}: namespace changed`);
        if (!deepEqual(tuple?.checkpoint.channel_values, { [channel]: label }))
          problems.push(`${label}: values changed`);
        if (!deepEqual(tuple?.pendingWrites, [["task", channel, label]])) problems.push(`${label}: writes changed`);
        outcomes[label] = "stored";
        if (ns.length > 0) longestNamespace = Math.max(longestNamespace, ns.length);
      } catch (error) {
        const cause = (error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : "";
        outcomes[label] = `refused: ${cause || (error as Error).message.slice(0, 100)}`;
        if (JSON.stringify(await raw.counts()) !== JSON.stringify(before))
          problems.push(`${label}: refused but wrote rows`);
      }
    }
    report("long namespaces and channel names", dialect, {
      outcomes,
      longestNamespaceStored: longestNamespace,
      lost: problems.length,
    });
    expect(problems).toEqual([]);
    // Deep subgraph nesting (about 40 levels) must work everywhere.
    expect(outcomes["namespace of 1000"]).toBe("stored");
    expect(outcomes["namespace of 2000"]).toBe("stored");
  });

  it("a 32 MiB state value (bytes and text) and a 32 MiB pending write round-trip", async () => {
    const MiB = 1024 * 1024;
    const bytes = new Uint8Array(randomBytes(32 * MiB));
    const text = randomBytes(16 * MiB).toString("hex"); // 32 Mi characters
    const write = new Uint8Array(randomBytes(32 * MiB));

    const first = checkpointWith(saver, { bytes: { payload: bytes } });
    const saved = await saver.put({ configurable: { thread_id: "big" } }, first.checkpoint, META, first.versions);
    const second = checkpointWith(saver, { text });
    const savedText = await saver.put(
      { configurable: { thread_id: "big", checkpoint_id: saved.configurable?.checkpoint_id } },
      second.checkpoint,
      META,
      second.versions,
    );
    await saver.putWrites(savedText, [["bytes", write]], "big-task");

    const back = await saver.getTuple(saved);
    const payload =
      (back?.checkpoint.channel_values.bytes as { payload: Uint8Array } | undefined)?.payload ?? new Uint8Array();
    expect(payload.byteLength).toBe(bytes.byteLength);
    expect(sha256(payload)).toBe(sha256(bytes));
    const backText = await saver.getTuple(savedText);
    expect(((backText?.checkpoint.channel_values.text as string | undefined) ?? "").length).toBe(text.length);
    expect(backText?.checkpoint.channel_values.text === text).toBe(true);
    const [[task, channel, value]] = backText?.pendingWrites ?? [[]];
    expect([task, channel]).toEqual(["big-task", "bytes"]);
    expect(sha256(value as Uint8Array)).toBe(sha256(write));
    report("32 MiB values", dialect, { valuesOf32MiB: 3, kinds: ["bytes", "text", "pending write"], lost: 0 });
  }, 300_000);

  if (dialect === "mysql") {
    it("a value beyond max_allowed_packet fails with a clear error, writes nothing, and the saver keeps working", async () => {
      const [{ packet }] = (await raw.query("select @@global.max_allowed_packet as packet")) as { packet: unknown }[];
      const limit = Number(packet);
      expect(limit).toBeLessThanOrEqual(256 * 1024 * 1024); // the check below allocates limit + 1 MiB
      const tooBig = new Uint8Array(randomBytes(limit + 1024 * 1024));
      const { checkpoint, versions } = checkpointWith(saver, { payload: tooBig });
      const before = await raw.counts();
      let message = "";
      await expect(
        saver.put({ configurable: { thread_id: "too-big" } }, checkpoint, META, versions).catch((error: Error) => {
          message = `${error.message.split("\n")[0].slice(0, 60)} <- ${String(error.cause)}`;
          throw error;
        }),
      ).rejects.toThrow();
      expect(message).toMatch(/max_allowed_packet|packet/i);
      expect(await raw.counts()).toEqual(before);
      expect(await saver.getTuple({ configurable: { thread_id: "too-big" } })).toBeUndefined();
      const small = checkpointWith(saver, { ok: true });
      const saved = await saver.put(
        { configurable: { thread_id: "after-too-big" } },
        small.checkpoint,
        META,
        small.versions,
      );
      expect((await saver.getTuple(saved))?.checkpoint.channel_values).toEqual({ ok: true });
      report("value beyond max_allowed_packet", dialect, {
        maxAllowedPacket: limit,
        valueBytes: tooBig.byteLength,
        error: message.slice(0, 160),
        written: 0,
      });
    }, 300_000);
  }

  it("wrong types get clear errors and write nothing", async () => {
    const { checkpoint, versions } = checkpointWith(saver, { v: 1 });
    const base = await saver.put({ configurable: { thread_id: "types" } }, checkpoint, META, versions);
    const fresh = () => checkpointWith(saver, { v: 1 }).checkpoint;
    const put = (config: unknown, cp: unknown = fresh(), metadata: unknown = META, newVersions: unknown = {}) =>
      saver.put(
        config as RunnableConfig,
        cp as Checkpoint,
        metadata as CheckpointMetadata,
        newVersions as Record<string, string>,
      );
    const putWrites = (writes: unknown, taskId: unknown = "task", config: unknown = base, taskPath?: unknown) =>
      saver.putWrites(config as RunnableConfig, writes as PendingWrite[], taskId as string, taskPath as string);
    const list = (config: unknown, options: unknown) => all(saver.list(config as RunnableConfig, options as never));
    const thread = { configurable: { thread_id: "types" } };
    const cases: [string, () => Promise<unknown>, RegExp][] = [
      ["put without config", () => put(undefined), /configurable/],
      ["put without configurable", () => put({}), /configurable/],
      ["put with configurable null", () => put({ configurable: null }), /configurable/],
      ["put with configurable a string", () => put({ configurable: "t" }), /configurable/],
      ...[42, null, true, {}, ["t"], ""].map((id): [string, () => Promise<unknown>, RegExp] => [
        `put thread_id ${JSON.stringify(id)}`,
        () => put({ configurable: { thread_id: id } }),
        /thread_id must be a non-empty string/,
      ]),
      [
        "put checkpoint_ns 42",
        () => put({ configurable: { thread_id: "types", checkpoint_ns: 42 } }),
        /checkpoint_ns must be a string/,
      ],
      [
        "put parent checkpoint_id 42",
        () => put({ configurable: { thread_id: "types", checkpoint_id: 42 } }),
        /checkpoint_id must be/,
      ],
      ["put checkpoint null", () => put(thread, null), /checkpoint must be an object/],
      ["put checkpoint a string", () => put(thread, "checkpoint"), /checkpoint must be an object/],
      ["put checkpoint.id 42", () => put(thread, { ...fresh(), id: 42 }), /checkpoint.id must be/],
      ["put checkpoint without id", () => put(thread, { ...fresh(), id: undefined }), /checkpoint.id must be/],
      ...["x", [], null, 42].map((metadata): [string, () => Promise<unknown>, RegExp] => [
        `put metadata ${JSON.stringify(metadata)}`,
        () => put(thread, fresh(), metadata),
        /metadata must be an object/,
      ]),
      ["put metadata with a bigint", () => put(thread, fresh(), { ...META, n: 1n }), /bigint/],
      ["put metadata with NaN", () => put(thread, fresh(), { ...META, n: Number.NaN }), /cannot be stored as JSON/],
      ["put newVersions a string", () => put(thread, fresh(), META, "abc"), /newVersions|versions/i],
      ["put newVersions an array", () => put(thread, fresh(), META, ["v"]), /newVersions|versions/i],
      ["put newVersions a number", () => put(thread, fresh(), META, 42), /newVersions|versions/i],
      [
        "put channel_values a string",
        () => put(thread, { ...fresh(), channel_values: "abc" }, META, { 0: "1" }),
        /channel_values/,
      ],
      ...["x", {}, null, 42, undefined].map((writes): [string, () => Promise<unknown>, RegExp] => [
        `putWrites writes ${JSON.stringify(writes) ?? "undefined"}`,
        () => putWrites(writes),
        /writes must be an array/,
      ]),
      ["putWrites a write that is a string", () => putWrites(["ab"]), /write 0 must be a \[channel, value\] pair/],
      [
        "putWrites a channel that is a number",
        () => putWrites([[1, "v"]]),
        /write 0 must be a \[channel, value\] pair/,
      ],
      ["putWrites a write that is null", () => putWrites([null]), /write 0 must be a \[channel, value\] pair/],
      [
        "putWrites a bad write after a good one",
        () => putWrites([["v", 1], [2]]),
        /write 1 must be a \[channel, value\] pair/,
      ],
      ...[42, "", null, {}].map((taskId): [string, () => Promise<unknown>, RegExp] => [
        `putWrites task id ${JSON.stringify(taskId)}`,
        () => putWrites([["v", 1]], taskId),
        /task id must be a non-empty string/,
      ]),
      ["putWrites task path 42", () => putWrites([["v", 1]], "task", base, 42), /task path must be a string/],
      ["putWrites without checkpoint_id", () => putWrites([["v", 1]], "task", thread), /checkpoint_id/],
      ["putWrites without configurable", () => putWrites([["v", 1]], "task", {}), /configurable/],
      ...[-1, 1.5, Number.NaN, "5", Number.POSITIVE_INFINITY].map((limit): [string, () => Promise<unknown>, RegExp] => [
        `list limit ${String(limit)}`,
        () => list({}, { limit }),
        /limit must be a non-negative integer/,
      ]),
      ["list filter a string", () => list({}, { filter: "source" }), /filter must be an object/],
      ["list filter an array", () => list({}, { filter: ["source"] }), /filter must be an object/],
      ["list filter with a function", () => list({}, { filter: { a: () => 1 } }), /cannot be matched/],
      ["list filter with a bigint", () => list({}, { filter: { a: 1n } }), /bigint/],
      ["list filter with NaN", () => list({}, { filter: { a: Number.NaN } }), /cannot be stored as JSON/],
      [
        "list before with a numeric id",
        () => list({}, { before: { configurable: { checkpoint_id: 42 } } }),
        /before.checkpoint_id must be/,
      ],
      ["list thread_id 42", () => list({ configurable: { thread_id: 42 } }, {}), /thread_id must be/],
      [
        "list checkpoint_ns 42",
        () => list({ configurable: { checkpoint_ns: 42 } }, {}),
        /checkpoint_ns must be a string/,
      ],
      ["getTuple thread_id {}", () => saver.getTuple({ configurable: { thread_id: {} } }), /thread_id must be/],
      [
        "getTuple checkpoint_id 42",
        () => saver.getTuple({ configurable: { thread_id: "types", checkpoint_id: 42 } }),
        /checkpoint_id must be/,
      ],
      ...[42, "", undefined, null].map((id): [string, () => Promise<unknown>, RegExp] => [
        `deleteThread ${JSON.stringify(id) ?? "undefined"}`,
        () => saver.deleteThread(id as string),
        /thread_id must be/,
      ]),
    ];
    const problems: string[] = [];
    for (const [label, call, pattern] of cases) {
      const problem = await refused(raw, call, pattern);
      if (problem) problems.push(`${label}: ${problem}`);
    }
    // The valid checkpoint is untouched by all of it.
    expect((await saver.getTuple(base))?.checkpoint.channel_values).toEqual({ v: 1 });
    report("wrong types", dialect, {
      callsTried: cases.length,
      refusedCleanly: cases.length - problems.length,
      problems,
    });
    expect(problems).toEqual([]);
  });
});

/** Deep equality that keeps U+0000, lone surrogates and own __proto__ keys apart. */
function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every(
    (key) =>
      Object.hasOwn(b, key) &&
      deepEqual(Object.getOwnPropertyDescriptor(a, key)?.value, Object.getOwnPropertyDescriptor(b, key)?.value),
  );
}
