/**
 * Metadata deeper than the target's JSON holds: a thread written on PostgreSQL with
 * metadata 40 levels deep travels to SQLite, while MariaDB (31 levels at most) refuses
 * that thread alone with our error and imports the others; nothing of it is stored.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Checkpoint, type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, expect, it } from "vitest";
import { type DrizzleSaver, exportThreads, importThreads } from "../../src/index.js";
import { type DialectName, freshSaver } from "../helpers/databases.js";

const savers: DrizzleSaver[] = [];
afterAll(async () => {
  for (const saver of savers) await saver.close();
});

async function fresh(dialect: DialectName) {
  const opened = await freshSaver(dialect);
  savers.push(opened.saver);
  return opened;
}

function nested(levels: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

const checkpoint = (step: number): Checkpoint => ({
  v: 4,
  id: uuid6(step),
  ts: new Date().toISOString(),
  channel_values: { step },
  channel_versions: { step: `${step + 1}` },
  versions_seen: {},
});

it("imports metadata as deep as the target holds, and fails the thread whose metadata is deeper", async () => {
  const origin = await fresh("postgres");
  const plain: CheckpointMetadata = { source: "loop", step: 0, parents: {} };
  const deep = { ...plain, deep: nested(39) };
  await origin.saver.put({ configurable: { thread_id: "plain" } }, checkpoint(0), plain, { step: "1" });
  await origin.saver.put({ configurable: { thread_id: "deep" } }, checkpoint(1), deep, { step: "2" });
  const file = join(mkdtempSync(join(tmpdir(), "lgcd-deep-")), "threads.jsonl");
  expect(await exportThreads({ url: origin.url }, file)).toMatchObject({ threads: 2, failed: [] });

  const sqlite = await fresh("sqlite");
  expect(await importThreads(sqlite.url, { file })).toMatchObject({ imported: 2, failed: [] });
  expect((await sqlite.saver.getTuple({ configurable: { thread_id: "deep" } }))?.metadata).toEqual(deep);

  const mariadb = await fresh("mysql");
  const summary = await importThreads(mariadb.url, { file });
  expect(summary.imported).toBe(1);
  expect(summary.failed.map((failure) => failure.threadId)).toEqual(["deep"]);
  expect(summary.failed[0].error).toMatch(/more than 31 levels deep/);
  expect(await mariadb.saver.getTuple({ configurable: { thread_id: "deep" } })).toBeUndefined();
  expect(await mariadb.saver.getTuple({ configurable: { thread_id: "plain" } })).toBeDefined();
});
