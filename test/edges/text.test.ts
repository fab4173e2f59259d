import { randomBytes } from "node:crypto";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { newThreadId, threadConfig } from "../lifecycle/support.js";
import { checkpointOf, collect, loopMetadata, putValues } from "./support.js";

/**
 * Text round-trips exactly and compares exactly whatever the database's defaults:
 * on MySQL/MariaDB the tables declare their own character set and collations, so a
 * database created latin1 or with a case-insensitive collation changes nothing.
 */

/** A MySQL database created with the given character set clause. */
async function mysqlDatabase(clause: string): Promise<string> {
  const base = process.env.MYSQL_URL;
  if (!base) throw new Error("MYSQL_URL is not set");
  const name = `t_${randomBytes(6).toString("hex")}`;
  const admin = await mysql.createConnection(base);
  await admin.query(`create database ${name} ${clause}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

const CASES: [string, DialectName, string | undefined][] = [
  ["sqlite", "sqlite", undefined],
  ["postgres", "postgres", undefined],
  ["mysql, database created latin1", "mysql", "character set latin1"],
  ["mysql, database with a case-insensitive collation", "mysql", "character set utf8mb4 collate utf8mb4_general_ci"],
];

describe.each(CASES)("text columns on %s", (_, dialect, clause) => {
  let saver: DrizzleSaver;
  beforeAll(async () => {
    const url = clause === undefined ? await freshDatabaseUrl(dialect) : await mysqlDatabase(clause);
    saver = await DrizzleSaver.fromUrl(url);
    await saver.setup();
  });
  afterAll(async () => {
    await saver?.close();
  });

  it("reads back channel names, task paths, serializer types and metadata in any script", async () => {
    const config = await putValues(
      saver,
      threadConfig(newThreadId("scripts")),
      checkpointOf(uuid6(-1), { café: "crème", 検索: "結果" }),
      { ...loopMetadata(0), source: "検索", run_id: "café", note: "検索 café" } as never,
    );
    await saver.putWrites(
      config,
      [
        ["branch:to:café", "go"],
        ["branch:to:検索", "行く"],
      ],
      "task-1",
      "~__pregel_pull, café|検索",
    );
    const tuple = await saver.getTuple(config);
    expect(tuple?.checkpoint.channel_values).toEqual({ café: "crème", 検索: "結果" });
    expect((tuple?.metadata as Record<string, unknown> | undefined)?.note).toBe("検索 café");
    const filtered = await collect(saver.list({}, { filter: { source: "検索", run_id: "café" } }));
    expect(filtered.map((t) => t.checkpoint.id)).toEqual([tuple?.checkpoint.id]);
    expect(tuple?.pendingWrites).toEqual([
      ["task-1", "branch:to:café", "go"],
      ["task-1", "branch:to:検索", "行く"],
    ]);
    const history = await saver.getDeltaChannelHistory({
      config: { configurable: { ...config.configurable, checkpoint_id: undefined } },
      channels: ["branch:to:café"],
    });
    expect(history["branch:to:café"].writes).toEqual([]);
  });

  it("tells channels apart by case and trailing spaces in getDeltaChannelHistory", async () => {
    const threadId = newThreadId("case");
    const first = await putValues(
      saver,
      threadConfig(threadId),
      checkpointOf(uuid6(-1), { notes: "lower", Notes: "upper", "notes ": "spaced" }),
    );
    await saver.putWrites(
      first,
      [
        ["notes", "n1"],
        ["Notes", "N1"],
        ["notes ", "s1"],
      ],
      "task-a",
    );
    const second = await saver.put(first, { ...checkpointOf(uuid6(-1)), channel_versions: {} }, loopMetadata(1), {});
    const expected = {
      notes: { seed: "lower", writes: [["task-a", "notes", "n1"]] },
      Notes: { seed: "upper", writes: [["task-a", "Notes", "N1"]] },
      "notes ": { seed: "spaced", writes: [["task-a", "notes ", "s1"]] },
    };
    for (const channel of Object.keys(expected) as (keyof typeof expected)[]) {
      const alone = await saver.getDeltaChannelHistory({ config: second, channels: [channel] });
      expect(alone).toEqual({ [channel]: expected[channel] });
    }
    expect(await saver.getDeltaChannelHistory({ config: second, channels: Object.keys(expected) })).toEqual(expected);
  });

  it("finds the stored value of channels whose names start with '-' in getDeltaChannelHistory", async () => {
    // MariaDB's JSON paths cannot name a key starting with "-", not even quoted.
    const threadId = newThreadId("dash");
    const values = { "-x": "dash", "-X": "DASH", "--": "two", "-": "one", "x-": "after" };
    const first = await putValues(saver, threadConfig(threadId), checkpointOf(uuid6(-1), values));
    await saver.putWrites(first, [["-x", "w"]], "task-a");
    const second = await saver.put(first, { ...checkpointOf(uuid6(-1)), channel_versions: {} }, loopMetadata(1), {});
    const history = await saver.getDeltaChannelHistory({ config: second, channels: Object.keys(values) });
    expect(history).toEqual({
      "-x": { seed: "dash", writes: [["task-a", "-x", "w"]] },
      "-X": { seed: "DASH", writes: [] },
      "--": { seed: "two", writes: [] },
      "-": { seed: "one", writes: [] },
      "x-": { seed: "after", writes: [] },
    });
  });
});
