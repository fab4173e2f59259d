/**
 * Stores with a native vector index for the store's vector tests: PGlite with its pgvector
 * extension, libSQL's vector index, sqlite-vec on better-sqlite3, and a PostgreSQL server
 * when pgvector is installed there (otherwise that target is skipped, saying why).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { createClient } from "@libsql/client";
import Database from "better-sqlite3";
import { drizzle as drizzleLibsql } from "drizzle-orm/libsql";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import postgres from "postgres";
import * as sqliteVec from "sqlite-vec";
import { DrizzleStore, type DrizzleStoreOptions } from "../../src/index.js";
import { storeTables as pgStoreTables } from "../../src/schema/pg.js";
import { storeTables as sqliteStoreTables } from "../../src/schema/sqlite.js";
import { freshDatabaseUrl } from "./databases.js";
import type { OpenStore } from "./stores.js";

export const NATIVE_TARGETS = ["pglite-pgvector", "postgres-pgvector", "libsql", "sqlite-vec"] as const;
export type NativeTarget = (typeof NATIVE_TARGETS)[number];

/** Why the PostgreSQL server cannot have pgvector, or undefined when it can. Fails without PG_URL. */
export async function pgvectorMissing(): Promise<string | undefined> {
  const url = process.env.PG_URL;
  if (!url) throw new Error("PG_URL is not set: the PostgreSQL server tests need it");
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] =
      await client`select exists (select 1 from pg_available_extensions where name = 'vector') as available`;
    return row?.available ? undefined : "pgvector is not installed on the PostgreSQL server at PG_URL";
  } finally {
    await client.end();
  }
}

/** A store with a native index, and raw SQL on its database (to look at the side tables). */
export interface OpenNativeStore extends OpenStore {
  raw(text: string): Promise<Record<string, unknown>[]>;
  /**
   * Another store on the same database (its own connection where the driver has several),
   * over the tables already there (`tables`: its setup() builds only the vector index, which
   * also keeps PGlite away from a second run of the migrations on one instance); close it.
   */
  another(options: DrizzleStoreOptions): Promise<DrizzleStore>;
}

/** A fresh store on `target` with `options` (which name `index.native`), set up unless `setup` is false. */
export async function freshNativeStore(
  target: NativeTarget,
  options: DrizzleStoreOptions,
  setup = true,
): Promise<OpenNativeStore> {
  switch (target) {
    case "pglite-pgvector": {
      const client = await PGlite.create({ extensions: { vector } });
      const store = new DrizzleStore(drizzlePglite(client), options);
      if (setup) await store.setup();
      return {
        store,
        dialect: "postgres",
        raw: async (text) => (await client.query<Record<string, unknown>>(text)).rows,
        another: async (more) => new DrizzleStore(drizzlePglite(client), { ...more, tables: pgStoreTables() }),
        close: async () => {
          await store.close();
          await client.close();
        },
      };
    }
    case "postgres-pgvector": {
      const url = await freshDatabaseUrl("postgres");
      const store = await DrizzleStore.fromUrl(url, options);
      if (setup) await store.setup();
      const client = postgres(url, { max: 1, onnotice: () => {} });
      return {
        store,
        dialect: "postgres",
        url,
        raw: async (text) => [...(await client.unsafe(text))],
        another: (more) => DrizzleStore.fromUrl(url, { ...more, tables: pgStoreTables() }),
        close: async () => {
          await store.close();
          await client.end();
        },
      };
    }
    case "libsql": {
      // Busy timeout: another connection (a transaction, another store) may hold the write lock.
      const file = join(mkdtempSync(join(tmpdir(), "lgcd-native-")), "test.db");
      const client = createClient({ url: `file:${file}`, timeout: 10_000 });
      await client.execute("pragma journal_mode = wal");
      const store = new DrizzleStore(drizzleLibsql(client), options);
      if (setup) await store.setup();
      return {
        store,
        dialect: "sqlite",
        raw: async (text) => (await client.execute(text)).rows as unknown as Record<string, unknown>[],
        another: async (more) => new DrizzleStore(drizzleLibsql(client), { ...more, tables: sqliteStoreTables() }),
        close: async () => {
          await store.close();
          client.close();
        },
      };
    }
    case "sqlite-vec": {
      const url = await freshDatabaseUrl("sqlite");
      const store = await DrizzleStore.fromUrl(url, options);
      if (setup) await store.setup();
      const database = new Database(url);
      sqliteVec.load(database);
      return {
        store,
        dialect: "sqlite",
        url,
        raw: async (text) => database.prepare(text).all() as Record<string, unknown>[],
        another: (more) => DrizzleStore.fromUrl(url, { ...more, tables: sqliteStoreTables() }),
        close: async () => {
          await store.close();
          database.close();
        },
      };
    }
  }
}
