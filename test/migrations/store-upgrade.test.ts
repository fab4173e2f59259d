/**
 * The upgrade that adds the store's table, from the previous release's schema holding
 * saver data: DrizzleStore.setup() applies it, the checkpoints are kept and still read,
 * and the store then works beside the saver.
 */
import { rmSync } from "node:fs";
import { type Checkpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import type { Dialect } from "../../src/dialects/dialect.js";
import { DrizzleSaver, DrizzleStore } from "../../src/index.js";
import { migrate } from "../../src/savers/migrations/migrate.js";
import { DIALECTS, freshDatabaseUrl } from "../helpers/databases.js";
import { releasedBefore } from "./earlier-rows.js";

const MIGRATION = "store_items";

describe.each(DIALECTS)("upgrade adding the store's table on %s", (dialectName) => {
  it("keeps the saver's data and gives a working store", async () => {
    const url = await freshDatabaseUrl(dialectName);
    const { folder, count, pending } = releasedBefore(dialectName === "postgres" ? "pg" : dialectName, MIGRATION);
    const saver = await DrizzleSaver.fromUrl(url);
    const store = await DrizzleStore.fromUrl(url);
    try {
      const dialect = (saver as unknown as { dialect: Dialect }).dialect;
      const options = { migrationsFolder: folder, migrationsTable: "langgraph_checkpoint_migrations" };
      expect(await migrate(dialect, options)).toHaveLength(count);
      const config = { configurable: { thread_id: "kept", checkpoint_ns: "" } };
      const checkpoint: Checkpoint = {
        v: 4,
        id: uuid6(-1),
        ts: "",
        channel_values: { messages: ["hello"] },
        channel_versions: { messages: "1.0" },
        versions_seen: {},
      };
      await saver.put(config, checkpoint, { source: "loop", step: 0, parents: {} }, { messages: "1.0" });

      expect((await store.setup()).map((m) => m.tag)).toEqual(pending);
      expect((await saver.migrationStatus()).pending).toEqual([]);
      expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ messages: ["hello"] });
      await store.put(["users", "kept"], "memory", { likes: "tea" });
      expect((await store.get(["users", "kept"], "memory"))?.value).toEqual({ likes: "tea" });
      // A second setup, from either side, has nothing left to do.
      expect(await store.setup()).toEqual([]);
      expect(await saver.setup()).toEqual([]);
    } finally {
      await store.close();
      await saver.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
