import { rmSync } from "node:fs";
import type { RunnableConfig } from "@langchain/core/runnables";
import { type Checkpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { Dialect } from "../../src/dialects/dialect.js";
import { DrizzleSaver } from "../../src/index.js";
import { migrate } from "../../src/savers/migrations/migrate.js";
import { DIALECTS, freshDatabaseUrl } from "../helpers/databases.js";
import { releasedBefore } from "./earlier-rows.js";

/**
 * The upgrade to incremental values (the delta_chain column), from the previous
 * release's schema holding data: values stored whole before it still read, and a
 * list that extends one of them is then stored as its appended elements.
 */

const FOLDER = { pg: "pg", mysql: "mysql", sqlite: "sqlite" } as const;
const MIGRATION = "incremental_values";

const config = (checkpointId?: string): RunnableConfig => ({
  configurable: { thread_id: "kept", checkpoint_ns: "", ...(checkpointId ? { checkpoint_id: checkpointId } : {}) },
});

async function putMessages(saver: DrizzleSaver, parent: string | undefined, messages: unknown[], step: number) {
  const version = `${String(step + 1).padStart(4, "0")}.0`;
  const checkpoint: Checkpoint = {
    v: 4,
    id: uuid6(-1),
    ts: "",
    channel_values: { messages },
    channel_versions: { messages: version },
    versions_seen: {},
  };
  await saver.put(config(parent), checkpoint, { source: "loop", step, parents: {} }, { messages: version });
  return checkpoint.id;
}

describe.each(DIALECTS)("upgrade to incremental values on %s", (dialectName) => {
  it("keeps the values stored whole before it, and extends them with deltas after it", async () => {
    const url = await freshDatabaseUrl(dialectName);
    const folderName = FOLDER[dialectName === "postgres" ? "pg" : dialectName];
    const { folder, count, pending } = releasedBefore(folderName, MIGRATION);
    // The previous release's saver stored every value whole, as incrementalValues: 0 does.
    const old = await DrizzleSaver.fromUrl(url, { incrementalValues: 0 });
    const saver = await DrizzleSaver.fromUrl(url);
    try {
      const dialect = (old as unknown as { dialect: Dialect }).dialect;
      const options = { migrationsFolder: folder, migrationsTable: "langgraph_checkpoint_migrations" };
      expect(await migrate(dialect, options)).toHaveLength(count);
      let messages: string[] = [];
      let parent: string | undefined;
      for (let step = 0; step < 5; step++) {
        messages = [...messages, `old ${step}`];
        parent = await putMessages(old, parent, messages, step);
      }

      expect((await saver.migrationStatus()).pending.map((m) => m.tag)).toEqual(pending);
      expect((await saver.setup()).map((m) => m.tag)).toEqual(pending);

      const latest = await saver.getTuple(config());
      expect(latest?.checkpoint.channel_values.messages).toEqual(messages);
      // The list read back is extended: stored as the appended elements on the old whole value.
      let extended = latest?.checkpoint.channel_values.messages as string[];
      for (let step = 5; step < 8; step++) {
        extended = [...extended, `new ${step}`];
        parent = await putMessages(saver, parent, extended, step);
      }
      const history: unknown[] = [];
      for await (const tuple of saver.list(config())) history.push(tuple.checkpoint.channel_values.messages);
      expect(history).toEqual(
        Array.from({ length: 8 }, (_, i) =>
          Array.from({ length: i + 1 }, (__, k) => (k < 5 ? `old ${k}` : `new ${k}`)),
        ).reverse(),
      );
      const b = dialect.columns.blobs;
      const rows = await dialect.query(sql`select count(*) as n from ${b.table} where ${b.deltaChain} is not null`);
      expect(Number(rows[0].n)).toBe(3);
    } finally {
      await old.close();
      await saver.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
