import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidInputError } from "../../src/index.js";
import { FILTER_LIMITS } from "../../src/savers/values/metadata.js";
import { DIALECTS, freshSaver } from "../helpers/databases.js";
import { openTestDatabase, type TestDatabase } from "./database.js";
import { emptyCheckpoint } from "./reference.js";

/**
 * Metadata filters are bounded (docs/queries-and-filters.md): beyond a limit `list` and
 * `listThreads` refuse the filter before sending any SQL; at the limits they answer
 * exactly, and on PostgreSQL the filter is one predicate whatever its number of keys.
 */

/** A filter value nested `depth` levels deep: depth 0 is a scalar. */
const nested = (depth: number): unknown => (depth === 0 ? 1 : { a: nested(depth - 1) });

/** Metadata with `keys` extra keys k0, k1, ... (as an application's own keys). */
function manyKeys(keys: number, value: (i: number) => unknown = (i) => i): Record<string, unknown> {
  return Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, value(i)]));
}

function cyclic(): Record<string, unknown> {
  const value: Record<string, unknown> = { a: 1 };
  value.self = value;
  return value;
}

const OVER_THE_LIMITS: [string, Record<string, unknown>][] = [
  ["too many keys", manyKeys(FILTER_LIMITS.keys + 1)],
  ["too deep", { deep: nested(FILTER_LIMITS.depth + 1) }],
  ["too many values", { list: Array.from({ length: FILTER_LIMITS.values }, (_, i) => i) }],
  ["too large", { text: "x".repeat(FILTER_LIMITS.bytes) }],
  ["too large in multi-byte characters", { text: "é".repeat(FILTER_LIMITS.bytes / 2) }],
  ["cyclic", { loop: cyclic() }],
];

describe.each(DIALECTS)("metadata filter limits on %s", (dialect) => {
  let db: TestDatabase;
  let thread = 0;

  beforeAll(async () => {
    const { saver, url } = await freshSaver(dialect);
    await saver.close();
    db = await openTestDatabase(dialect, url);
  });
  afterAll(async () => {
    await db?.close();
  });

  async function put(metadata: Record<string, unknown>): Promise<string> {
    const threadId = `limits-${++thread}`;
    const config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
    await db.saver.put(config, emptyCheckpoint(), metadata as unknown as CheckpointMetadata, {});
    return threadId;
  }

  async function threadsMatching(filter: Record<string, unknown>): Promise<string[]> {
    const threads: string[] = [];
    for await (const tuple of db.saver.list({}, { filter })) threads.push(String(tuple.config.configurable?.thread_id));
    return threads.sort();
  }

  /** The statements `run` sent, captured through drizzle's logger. */
  async function sent(run: () => Promise<unknown>): Promise<{ sql: string; params: unknown[] }[]> {
    db.statements.length = 0;
    db.capture = true;
    try {
      await run();
    } finally {
      db.capture = false;
    }
    return [...db.statements];
  }

  it("refuses a filter beyond any limit with an InvalidInputError, before sending SQL", async () => {
    for (const [label, filter] of OVER_THE_LIMITS) {
      const statements = await sent(async () => {
        await expect(threadsMatching(filter), label).rejects.toThrow(InvalidInputError);
        await expect(
          (async () => {
            for await (const _ of db.saver.listThreads({ filter })) break;
          })(),
          label,
        ).rejects.toThrow(InvalidInputError);
      });
      expect(statements, label).toEqual([]);
    }
  });

  it("answers exactly for filters at the limits", async () => {
    const list = Array.from({ length: FILTER_LIMITS.values - 1 }, (_, i) => i % 7);
    // Two bytes for the braces, the key and its quotes, the colon, the string's quotes.
    const text = "y".repeat(FILTER_LIMITS.bytes - 2 - 6 - 1 - 2);
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [manyKeys(FILTER_LIMITS.keys), manyKeys(FILTER_LIMITS.keys, (i) => (i === 99 ? "99" : i))],
      [{ deep: nested(FILTER_LIMITS.depth) }, { deep: nested(FILTER_LIMITS.depth - 1) }],
      [{ list }, { list: [...list.slice(0, -1), 8] }],
      [{ text }, { text: `${text.slice(0, -1)}z` }],
    ];
    for (const [filter, other] of cases) {
      const matching = await put({ source: "loop", step: 1, ...filter });
      const differing = await put({ source: "loop", step: 1, ...other });
      const found = await threadsMatching(filter);
      expect(found).toContain(matching);
      expect(found).not.toContain(differing);
    }
  });

  it.runIf(dialect === "postgres")("sends one predicate, whatever the number of keys", async () => {
    const parameters = async (keys: number) => {
      const statements = await sent(() => threadsMatching(manyKeys(keys)));
      expect(statements).toHaveLength(1);
      return statements[0].params.length;
    };
    expect(await parameters(FILTER_LIMITS.keys)).toBe(await parameters(1));
  });
});
