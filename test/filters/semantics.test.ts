import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, freshSaver } from "../helpers/databases.js";
import { filterArb, metadataArb } from "./arbitraries.js";
import { openTestDatabase, type TestDatabase } from "./database.js";
import {
  describeFilter,
  emptyCheckpoint,
  expectedList,
  type Filter,
  type JsonObject,
  jsonEqual,
  type ListQuery,
  matchesFilter,
  type StoredCheckpoint,
} from "./reference.js";

/**
 * `saver.list(config, { filter, before, limit })` against the documented semantics
 * (test/filters/reference.ts): a property test with random metadata and filters,
 * then hand-written cases, on every dialect.
 */

/** Runs per dialect; each run stores 1-8 checkpoints on fresh threads and checks up to 4 filters x 5 queries. */
const NUM_RUNS = 40;

describe.each(DIALECTS)("list filters on %s", (dialect) => {
  let saver: DrizzleSaver;
  let url: string;
  /** Everything ever stored in this database: cross-thread queries are checked against all of it. */
  const stored: StoredCheckpoint[] = [];
  let threads = 0;
  const freshThread = (label: string) => `${label}-${++threads}`;

  beforeAll(async () => {
    ({ saver, url } = await freshSaver(dialect));
  });
  afterAll(async () => {
    await saver?.close();
  });

  async function put(threadId: string, metadata: JsonObject): Promise<StoredCheckpoint> {
    const config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
    const checkpoint = emptyCheckpoint();
    await saver.put(config, checkpoint, metadata as unknown as CheckpointMetadata, {});
    const row = { threadId, checkpointId: checkpoint.id, metadata };
    stored.push(row);
    return row;
  }

  async function list(query: ListQuery): Promise<StoredCheckpoint[]> {
    const configurable = query.threadId === undefined ? {} : { thread_id: query.threadId };
    const before = query.before === undefined ? undefined : { configurable: { checkpoint_id: query.before } };
    const result: StoredCheckpoint[] = [];
    for await (const tuple of saver.list({ configurable }, { filter: query.filter, before, limit: query.limit })) {
      result.push({
        threadId: String(tuple.config.configurable?.thread_id),
        checkpointId: String(tuple.config.configurable?.checkpoint_id),
        metadata: tuple.metadata as unknown as JsonObject,
      });
    }
    return result;
  }

  const keyOf = (row: StoredCheckpoint) => `${row.threadId} ${row.checkpointId}`;

  function describeQuery(query: ListQuery): string {
    const { filter = {}, ...rest } = query;
    return `list(${JSON.stringify(rest)}, filter ${describeFilter(filter)})`;
  }

  /** `list` returns exactly the reference's checkpoints, in its order, with the metadata as stored. */
  async function expectList(query: ListQuery): Promise<StoredCheckpoint[]> {
    const got = await list(query);
    const want = expectedList(stored, query);
    expect(got.map(keyOf), describeQuery(query)).toEqual(want.map(keyOf));
    got.forEach((row, i) => {
      // Read back JSON-equal to what was stored (by value: another writer's -0.0 may come back as -0 or 0).
      const same = jsonEqual(row.metadata, want[i].metadata);
      expect(
        same,
        `metadata of ${keyOf(row)}: ${JSON.stringify(row.metadata)} vs ${JSON.stringify(want[i].metadata)}`,
      ).toBe(true);
    });
    return got;
  }

  it("returns exactly what the reference predicate selects (property)", async () => {
    const scenarioArb = fc.array(fc.tuple(fc.nat(2), metadataArb), { minLength: 1, maxLength: 8 }).chain((items) =>
      fc.record({
        items: fc.constant(items),
        queries: fc.array(
          fc.record({
            filter: filterArb(items.map(([, metadata]) => metadata)),
            thread: fc.nat(2),
            limit: fc.integer({ min: 0, max: 4 }),
            before: fc.nat(),
          }),
          { minLength: 1, maxLength: 4 },
        ),
      }),
    );
    let matched = 0;
    let total = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ items, queries }) => {
        const run = freshThread("run");
        const threadIds = [0, 1, 2].map((i) => `${run}-t${i}`);
        const ids: string[] = [];
        for (const [thread, metadata] of items) ids.push((await put(threadIds[thread], metadata)).checkpointId);
        for (const { filter, thread, limit, before: b } of queries) {
          const threadId = threadIds[thread];
          const before = ids[b % ids.length];
          const variants: ListQuery[] = [
            { threadId, filter },
            { filter },
            { threadId, filter, limit },
            { filter, limit, before },
            { threadId, filter, before },
          ];
          for (const query of variants) await expectList(query);
          total++;
          const constrained = Object.values(filter).some((value) => value !== undefined);
          if (constrained && expectedList(stored, { filter }).some((row) => row.threadId.startsWith(`${run}-`)))
            matched++;
        }
      }),
      // Shrinking re-runs against the database; a failure still reports its counterexample when cut short.
      { numRuns: NUM_RUNS, interruptAfterTimeLimit: 150_000, markInterruptAsFailure: true },
    );
    // The generators must produce non-empty filters that match, not only ones that match nothing or everything.
    expect(matched, `${matched} of ${total} non-empty filters matched something stored in their run`).toBeGreaterThan(
      total / 4,
    );
  }, 240_000);

  /**
   * Hand-written cases: each stores named metadata on a fresh thread and says which
   * names each filter must return (newest first is checked by expectList, the
   * membership here is written out rather than computed).
   */
  async function cases(metadata: Record<string, JsonObject>, expectations: [Filter, string[]][]): Promise<void> {
    const threadId = freshThread("case");
    const names = new Map<string, string>();
    for (const [name, m] of Object.entries(metadata)) names.set((await put(threadId, m)).checkpointId, name);
    for (const [filter, expected] of expectations) {
      // The reference agrees with the hand-written expectation...
      const byReference = Object.entries(metadata)
        .filter(([, m]) => matchesFilter(m, filter))
        .map(([name]) => name);
      expect(byReference.sort(), `reference for ${describeFilter(filter)}`).toEqual([...expected].sort());
      // ...and the saver returns those checkpoints, newest first, in the thread and across threads.
      const got = await expectList({ threadId, filter });
      expect(got.map((row) => names.get(row.checkpointId)).sort(), describeFilter(filter)).toEqual(
        [...expected].sort(),
      );
      await expectList({ filter });
    }
  }

  it("an empty sub-object or sub-array is not contained, it must be equal (parents: {})", async () => {
    await cases(
      {
        root: { source: "loop", step: 1, parents: {} },
        child: { source: "loop", step: 1, parents: { "": "abc" } },
        two: { source: "loop", step: 1, parents: { "": "abc", "sub:1": "def" } },
        noParents: { source: "loop", step: 1 },
        nullParents: { source: "loop", step: 1, parents: null },
        listParents: { source: "loop", step: 1, parents: [] },
      },
      [
        [{ parents: {} }, ["root"]],
        [{ parents: { "": "abc" } }, ["child"]],
        [{ parents: { "sub:1": "def", "": "abc" } }, ["two"]],
        [{ parents: [] }, ["listParents"]],
        [{ parents: null }, ["nullParents"]],
        [{ source: "loop", parents: {} }, ["root"]],
        [{ source: "loop" }, ["root", "child", "two", "noParents", "nullParents", "listParents"]],
      ],
    );
  });

  it("arrays compare in order and in full; objects in any key order and in full", async () => {
    await cases(
      {
        a12: { tags: [1, 2] },
        a21: { tags: [2, 1] },
        a123: { tags: [1, 2, 3] },
        nested: { tags: [[1, 2]] },
        scalar: { tags: 1 },
        empty: { tags: [] },
        obj: { o: { b: 1, c: [1, { d: null }] } },
        objReordered: { o: { c: [1, { d: null }], b: 1 } },
        objSmaller: { o: { b: 1 } },
        objDeeper: { o: { b: { c: 2 } } },
        objEmpty: { o: {} },
      },
      [
        [{ tags: [1, 2] }, ["a12"]],
        [{ tags: [2, 1] }, ["a21"]],
        [{ tags: [1] }, []],
        [{ tags: [1, 2, 3] }, ["a123"]],
        [{ tags: [[1, 2]] }, ["nested"]],
        [{ tags: 1 }, ["scalar"]],
        [{ tags: [] }, ["empty"]],
        [{ o: { b: 1, c: [1, { d: null }] } }, ["obj", "objReordered"]],
        [{ o: { c: [1, { d: null }], b: 1 } }, ["obj", "objReordered"]],
        [{ o: { b: 1 } }, ["objSmaller"]],
        [{ o: { c: [1, {}], b: 1 } }, []],
        [{ o: { b: { c: 2 } } }, ["objDeeper"]],
        [{ o: {} }, ["objEmpty"]],
      ],
    );
  });

  it("numbers by value, never equal to strings or booleans; null only matches an explicit null", async () => {
    const numbers: Record<string, JsonObject> = {
      three: { n: 3 },
      threeHalf: { n: 3.5 },
      threeString: { n: "3" },
      yes: { n: true },
      one: { n: 1 },
      zero: { n: 0 },
      no: { n: false },
      nil: { n: null },
      nullString: { n: "null" },
      missing: { other: 1 },
      tenth: { n: 0.1 },
      big: { n: 2 ** 53 },
      // 2 ** 55 is written "36028797018963970" by JSON.stringify: the shortest text that reads back as it.
      huge: { n: 2 ** 55 },
    };
    await cases(numbers, [
      [{ n: 3 }, ["three"]],
      [{ n: 3.0 }, ["three"]],
      [{ n: 3 }, ["three"]],
      [{ n: 30e-1 }, ["three"]],
      [{ n: "3" }, ["threeString"]],
      [{ n: "3.0" }, []],
      [{ n: 3.5 }, ["threeHalf"]],
      [{ n: true }, ["yes"]],
      [{ n: 1 }, ["one"]],
      [{ n: 0 }, ["zero"]],
      [{ n: -0 }, ["zero"]],
      [{ n: false }, ["no"]],
      [{ n: null }, ["nil"]],
      [{ n: "null" }, ["nullString"]],
      [{ n: "" }, []],
      [{ n: 0.1 }, ["tenth"]],
      [{ n: 0.1 + 0.2 - 0.2 }, []],
      [{ n: 2 ** 53 }, ["big"]],
      [{ n: 2 ** 53 + 2 }, []],
      [{ n: 2 ** 55 }, ["huge"]],
      [{ n: 36028797018963970 }, ["huge"]],
      [{ other: null }, []],
      // A key set to undefined is ignored: the filter is empty and matches everything.
      [{ n: undefined }, Object.keys(numbers)],
    ]);
  });

  it("strings compare exactly: case, trailing spaces, astral characters, NUL, lone surrogates", async () => {
    const looksEscaped = '\u{10FFFD}json:"loop"';
    await cases(
      {
        lower: { s: "loop" },
        upper: { s: "Loop" },
        trailing: { s: "loop " },
        emoji: { s: "😀 𝒳" },
        nul: { s: "lo\u0000op" },
        lone: { s: "\ud800" },
        escaped: { s: looksEscaped },
        composed: { s: "é" },
        decomposed: { s: "e\u0301" },
      },
      [
        [{ s: "loop" }, ["lower"]],
        [{ s: "LOOP" }, []],
        [{ s: "Loop" }, ["upper"]],
        [{ s: "loop " }, ["trailing"]],
        [{ s: "loop  " }, []],
        [{ s: "😀 𝒳" }, ["emoji"]],
        [{ s: "😀" }, []],
        [{ s: "lo\u0000op" }, ["nul"]],
        [{ s: "lo" }, []],
        [{ s: "\ud800" }, ["lone"]],
        [{ s: "\udc00" }, []],
        [{ s: looksEscaped }, ["escaped"]],
        [{ s: "é" }, ["composed"]],
        [{ s: "e\u0301" }, ["decomposed"]],
      ],
    );
  });

  it("keys are data, never path or SQL syntax", async () => {
    const keys = [
      "a.b",
      "$",
      "$.a",
      "'",
      '"',
      "]",
      "[0]",
      "\\",
      "*",
      "**",
      "",
      " ",
      'a"b',
      "a'b",
      "\n",
      "😀",
      "\u0000",
      "\udc00",
    ];
    const metadata: Record<string, JsonObject> = { nested: { a: { b: 1 } }, plain: { a: 1 }, x: { x: 1 } };
    keys.forEach((key, i) => {
      metadata[`key${i}`] = Object.fromEntries([[key, 1]]);
    });
    await cases(metadata, [
      ...keys.map((key, i): [Filter, string[]] => [Object.fromEntries([[key, 1]]), [`key${i}`]]),
      [{ a: { b: 1 } }, ["nested"]],
      [{ a: 1 }, ["plain"]],
      [{ "a.b": { b: 1 } }, []],
      [{ "$.x": 1 }, []],
      [{ $: { x: 1 } }, []],
      [{ "*": { b: 1 } }, []],
    ]);
  });

  it("source and step (indexed on MySQL and SQLite) follow the same rules as any key", async () => {
    const long = "x".repeat(70);
    const longAstral = "😀".repeat(64);
    await cases(
      {
        loop3: { source: "loop", step: 3 },
        loopCase: { source: "Loop", step: 3.0 },
        loopSpace: { source: "loop ", step: 3.5 },
        update: { source: "update", step: "3" },
        long: { source: long, step: 2.5 },
        astral: { source: longAstral, step: -1 },
        numeric: { source: 1, step: true },
        nulls: { source: null, step: null },
        array: { source: ["loop"], step: [3] },
        object: { source: { loop: 1 }, step: { step: 3 } },
        none: { other: "loop" },
      },
      [
        [{ source: "loop" }, ["loop3"]],
        [{ source: "LOOP" }, []],
        [{ source: "loop " }, ["loopSpace"]],
        [{ step: 3 }, ["loop3", "loopCase"]],
        [{ source: "loop", step: 3 }, ["loop3"]],
        [{ step: "3" }, ["update"]],
        [{ step: 3.5 }, ["loopSpace"]],
        [{ source: long }, ["long"]],
        [{ source: long.slice(1) }, []],
        [{ source: longAstral }, ["astral"]],
        [{ step: -1 }, ["astral"]],
        [{ step: 2.5 }, ["long"]],
        [{ source: 1 }, ["numeric"]],
        [{ source: "1" }, []],
        [{ step: true }, ["numeric"]],
        [{ step: 1 }, []],
        [{ source: null }, ["nulls"]],
        [{ step: null }, ["nulls"]],
        [{ source: ["loop"] }, ["array"]],
        [{ step: [3] }, ["array"]],
        [{ source: { loop: 1 } }, ["object"]],
        [{ step: { step: 3 } }, ["object"]],
        [{ source: "loop", step: undefined }, ["loop3"]],
      ],
    );
  });

  it("a __proto__ key is an ordinary key", async () => {
    const proto = Object.fromEntries([["__proto__", { polluted: true }]]) as JsonObject;
    await cases(
      {
        proto: { ...Object.fromEntries([["__proto__", { polluted: true }]]), source: "loop" },
        plain: { polluted: true, source: "loop" },
      },
      [
        [proto, ["proto"]],
        [{ polluted: true }, ["plain"]],
      ],
    );
  });

  it("keys outside the BMP are told apart, also where the connection's collation weighs them alike", async () => {
    // Found by the property test on MariaDB: two such paths read as one expression.
    const both = { "\u{5CDE8}\u{85057}\u{AACB}": -1, "\u{59D39}\u{A8393}\u{38173}": 1.7976931348623157e308 };
    await cases(
      {
        both: { source: both },
        first: { source: { "\u{5CDE8}\u{85057}\u{AACB}": -1 } },
        emoji: { "\u{1F600}": "a", "\u{1F601}": "b" },
      },
      [
        [{ source: both }, ["both"]],
        [{ "\u{1F600}": "a", "\u{1F601}": "b" }, ["emoji"]],
        [{ "\u{1F600}": "b" }, []],
      ],
    );
  });

  it("numbers written differently by another writer (3.0, 1e2, -0.0) compare by value", async () => {
    const db: TestDatabase = await openTestDatabase(dialect, url);
    try {
      const threadId = freshThread("raw");
      const rows = [
        '{"n": 3.0, "step": 3.0, "source": "loop"}',
        '{"n": 1e2, "step": 1E0, "source": "loop"}',
        '{"n": -0.0, "step": 2.50, "source": "loop"}',
        '{"n": 3, "step": 3, "source": "input"}',
      ].map((metadataJson) => ({ threadId, checkpointId: uuid6(-1), metadataJson }));
      await db.insertCheckpoints(rows);
      for (const row of rows) {
        stored.push({ threadId, checkpointId: row.checkpointId, metadata: JSON.parse(row.metadataJson) as JsonObject });
      }
      const ids = rows.map((row) => row.checkpointId);
      const idsOf = async (filter: Filter) => (await expectList({ threadId, filter })).map((row) => row.checkpointId);
      expect(await idsOf({ n: 3 })).toEqual([ids[3], ids[0]]);
      expect(await idsOf({ step: 3 })).toEqual([ids[3], ids[0]]);
      expect(await idsOf({ step: 3, source: "loop" })).toEqual([ids[0]]);
      expect(await idsOf({ n: 100 })).toEqual([ids[1]]);
      expect(await idsOf({ step: 1 })).toEqual([ids[1]]);
      expect(await idsOf({ n: 0 })).toEqual([ids[2]]);
      expect(await idsOf({ step: 2.5 })).toEqual([ids[2]]);
      expect(await idsOf({ n: "3" })).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it("pages through long filtered histories in order, across threads, with before and limit", async () => {
    const a = freshThread("long");
    const b = freshThread("long");
    for (let i = 0; i < 240; i++) {
      await put(i % 3 === 0 ? b : a, {
        source: i % 5 === 0 ? "input" : "loop",
        step: i % 7,
        parents: {},
        page: "long",
      });
    }
    const all = await expectList({ filter: { page: "long", source: "loop" } });
    expect(all.length).toBe(192);
    await expectList({ threadId: a, filter: { page: "long", source: "loop" } });
    await expectList({ filter: { page: "long" }, limit: 150 });
    await expectList({ filter: { page: "long", parents: {} }, before: all[20].checkpointId, limit: 130 });
    await expectList({ threadId: b, filter: { page: "long", step: 3 }, before: all[100].checkpointId });
    await expectList({ filter: { page: "long", step: 3 } });
  });
});
