import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { resolve } from "../../src/drivers/registry.js";
import { DrizzleSaver } from "../../src/index.js";
import { migrate } from "../../src/saver/migrate.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

/**
 * Released migrations are never edited; each later one is tested from the state the
 * previous release left, with data in it.
 */

/** The shipped migrations of a dialect cut after the first `count`, as an earlier release shipped them. */
function releasedUpTo(dialect: string, count: number): string {
  const folder = mkdtempSync(join(tmpdir(), "migrations-"));
  cpSync(`migrations/${dialect}`, folder, { recursive: true });
  const journalPath = join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8"));
  journal.entries = journal.entries.slice(0, count);
  writeFileSync(journalPath, JSON.stringify(journal));
  return folder;
}

describe("PostgreSQL upgrade from 0000_init", () => {
  it("0001 rebuilds the metadata index without a pending list and keeps every checkpoint", async () => {
    const url = await freshDatabaseUrl("postgres");
    const client = postgres(url, { onnotice: () => {} });
    const folder = releasedUpTo("pg", 1);
    try {
      // The state 0000_init left, with data written by the saver of that time.
      const options = { migrationsFolder: folder, migrationsTable: "langgraph_checkpoint_migrations" };
      expect(await migrate(resolve(drizzle(client), undefined).dialect, options)).toHaveLength(1);
      const saver = new DrizzleSaver(drizzle(client));
      let config = { configurable: { thread_id: "kept", checkpoint_ns: "" } };
      for (let step = 0; step < 20; step++) {
        const versions = { count: `${step + 1}` };
        config = (await saver.put(
          config,
          {
            v: 4,
            id: uuid6(-1),
            ts: "",
            channel_values: { count: step },
            channel_versions: versions,
            versions_seen: {},
          },
          { source: "loop", step, parents: {}, user: step % 2 === 0 ? "even" : "odd" } as CheckpointMetadata,
          versions,
        )) as never;
      }
      expect((await saver.migrationStatus()).pending.map((m) => m.tag)).toEqual([
        "0001_metadata_index_without_pending_list",
      ]);

      expect((await saver.setup()).map((m) => m.tag)).toEqual(["0001_metadata_index_without_pending_list"]);

      expect((await saver.migrationStatus()).pending).toEqual([]);
      const indexes = await client<{ relname: string; reloptions: string[] | null }[]>`
        select relname, reloptions from pg_class where relname like 'checkpoints%metadata_idx' order by relname`;
      expect(indexes).toHaveLength(9); // the partitioned index and one per partition
      for (const index of indexes) expect(index.reloptions).toEqual(["fastupdate=false"]);
      const latest = await saver.getTuple({ configurable: { thread_id: "kept" } });
      expect(latest?.checkpoint.channel_values).toEqual({ count: 19 });
      const odd = [];
      for await (const tuple of saver.list({}, { filter: { user: "odd" } })) odd.push(tuple.metadata?.step);
      expect(odd).toEqual([19, 17, 15, 13, 11, 9, 7, 5, 3, 1]);
    } finally {
      await client.end();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
