import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, InvalidInputError } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

const checkpoint = (id: string) => ({
  v: 4,
  id,
  ts: new Date(0).toISOString(),
  channel_values: { a: id },
  channel_versions: { a: `${id}.0` },
  versions_seen: {},
});
const metadata = { source: "input" as const, step: -1, parents: {} };
const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };

describe("the PostgreSQL schema option", () => {
  it("keeps tables and migrations in the schema, whatever the connection's search_path", async () => {
    const url = await freshDatabaseUrl("postgres");
    // A search_path naming a schema that does not exist: nothing may depend on it.
    const client = postgres(url, { onnotice: () => {}, connection: { search_path: "nowhere" } });
    const admin = postgres(url, { onnotice: () => {} });
    try {
      const first = new DrizzleSaver(drizzle(client), { schema: "agents one" });
      const second = new DrizzleSaver(drizzle(client), { schema: "agents_two" });
      expect((await first.setup()).length).toBeGreaterThan(0);
      expect((await second.setup()).length).toBeGreaterThan(0);
      expect(await first.setup()).toEqual([]);
      await first.put(config, checkpoint("1"), metadata, { a: "1.0" });
      await second.put(config, checkpoint("2"), metadata, { a: "2.0" });
      expect((await first.getTuple(config))?.checkpoint.channel_values).toEqual({ a: "1" });
      expect((await second.getTuple(config))?.checkpoint.channel_values).toEqual({ a: "2" });
      expect((await first.migrationStatus()).pending).toEqual([]);
      expect((await first.storageStats()).find((s) => s.table === "checkpoints")?.rows).toBe(1);
      await first.deleteThread("t");
      expect(await first.getTuple(config)).toBeUndefined();
      expect(await second.getTuple(config)).toBeDefined();

      const tables = await admin<{ schemaname: string; tablename: string }[]>`
        select schemaname, tablename from pg_tables
        where tablename in ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes', 'langgraph_checkpoint_migrations')
        order by 1, 2`;
      expect(tables.map((t) => `${t.schemaname}.${t.tablename}`)).toEqual([
        "agents one.checkpoint_blobs",
        "agents one.checkpoint_writes",
        "agents one.checkpoints",
        "agents one.langgraph_checkpoint_migrations",
        "agents_two.checkpoint_blobs",
        "agents_two.checkpoint_writes",
        "agents_two.checkpoints",
        "agents_two.langgraph_checkpoint_migrations",
      ]);
    } finally {
      await client.end();
      await admin.end();
    }
  });

  it("is refused on other databases and together with tables", async () => {
    const sqlite = await DrizzleSaver.fromUrl(":memory:").catch((error) => error);
    expect(sqlite).toBeInstanceOf(DrizzleSaver);
    await sqlite.close();
    await expect(DrizzleSaver.fromUrl(":memory:", { schema: "x" })).rejects.toThrow(InvalidInputError);
    await expect(DrizzleSaver.fromUrl(":memory:", { schema: "x" })).rejects.toThrow(/PostgreSQL only/);
  });
});
