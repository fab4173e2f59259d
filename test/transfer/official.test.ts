import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DrizzleSaver, importThreads } from "../../src/index.js";
import { normalize, normalSnapshot } from "../graphs/graphs.js";
import { DIALECTS, freshDatabaseUrl, freshSaver } from "../helpers/databases.js";
import { expectSameStates, graphsOver, resumeScenario, type Scenario, THREADS, writeScenario } from "./scenario.js";

/**
 * Threads written by the official savers with real graphs, imported into ours: every
 * state and history reads the same through our saver, and the graphs resume on it
 * exactly as they resume on the official saver.
 */

let officialPgUrl: string;
beforeAll(async () => {
  officialPgUrl = await freshDatabaseUrl("postgres");
});

interface Official {
  saver: BaseCheckpointSaver;
  source: { url: string; schema?: string };
  close(): Promise<void>;
}

async function officialSqlite(): Promise<Official> {
  const path = join(mkdtempSync(join(tmpdir(), "lgcd-official-")), "official.db");
  const saver = SqliteSaver.fromConnString(path);
  return {
    saver,
    source: { url: path },
    close: async () => {
      saver.db.close();
    },
  };
}

async function officialPostgres(schema: string): Promise<Official> {
  const saver = PostgresSaver.fromConnString(officialPgUrl, { schema });
  await saver.setup();
  return { saver, source: { url: officialPgUrl, schema }, close: () => saver.end() };
}

async function importAndCompare(official: Official, target: { saver: DrizzleSaver; url: string }, prefix: string) {
  const scenario: Scenario = await writeScenario(official.saver, prefix);
  const summary = await importThreads(target.url, official.source);
  expect(summary.failed).toEqual([]);
  expect(summary.imported).toBe(THREADS.length);
  expect(summary.writes).toBeGreaterThan(0);

  await expectSameStates(graphsOver(official.saver), graphsOver(target.saver), scenario);

  // Pending writes and metadata, tuple by tuple, in the order list() returns them.
  for (const name of THREADS) {
    const tuples = async (saver: BaseCheckpointSaver) => {
      const all = [];
      for await (const tuple of saver.list(scenario[name])) {
        all.push({
          config: tuple.config,
          parentConfig: tuple.parentConfig,
          metadata: normalize(tuple.metadata),
          // Only versioned channels: the official SQLite saver also keeps the defaults of unwritten ones.
          values: normalize(
            Object.fromEntries(
              Object.entries(tuple.checkpoint.channel_values).filter(
                ([channel]) => channel in tuple.checkpoint.channel_versions,
              ),
            ),
          ),
          id: tuple.checkpoint.id,
          ts: tuple.checkpoint.ts,
          pendingWrites: normalize(tuple.pendingWrites),
        });
      }
      return all;
    };
    expect(await tuples(target.saver), `tuples of ${name}`).toEqual(await tuples(official.saver));
  }

  // The same import again changes nothing.
  const again = await importThreads(target.url, official.source);
  expect(again).toMatchObject({ imported: 0, unchanged: THREADS.length, failed: [] });

  // Both resume the same way; afterwards the states agree (ids and times aside).
  const ours = graphsOver(target.saver);
  const theirs = graphsOver(official.saver);
  expect(await resumeScenario(ours, scenario)).toEqual(await resumeScenario(theirs, scenario));
  for (const name of THREADS) {
    const state = async (graphs: typeof ours) =>
      normalSnapshot(await (graphs[name] as typeof ours.chat).getState(scenario[name]));
    expect(await state(ours), `state of ${name} after resuming`).toEqual(await state(theirs));
  }
}

describe.each(DIALECTS)("import from the official savers into %s", (dialect) => {
  let target: { saver: DrizzleSaver; url: string };
  beforeAll(async () => {
    target = await freshSaver(dialect);
  });
  afterAll(async () => {
    await target?.saver.close();
  });

  it("reads the official SQLite saver's file: same states, histories and pending writes; resumes", async () => {
    const official = await officialSqlite();
    try {
      await importAndCompare(official, target, `sqlite-${dialect}`);
    } finally {
      await official.close();
    }
  });

  it("reads the official PostgreSQL saver's tables in their schema: same states, histories and pending writes; resumes", async () => {
    const official = await officialPostgres(`legacy_${dialect}`);
    try {
      await importAndCompare(official, target, `pg-${dialect}`);
    } finally {
      await official.close();
    }
  });
});
