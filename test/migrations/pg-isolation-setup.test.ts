// Concurrent setup() on a PostgreSQL database whose default isolation is stricter than
// READ COMMITTED (`default_transaction_isolation`, set by some applications or DBAs). A
// caller waiting on the migrations lock must see what the caller before it committed:
// under REPEATABLE READ its snapshot, taken before the wait, held none of it, so it ran
// 0000_init again and failed with 'relation "checkpoint_blobs" already exists'.
import { readFileSync } from "node:fs";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { lockNumber } from "../../src/dialects/pg-migrations.js";
import { DrizzleSaver, DrizzleStore } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

const MIGRATIONS = JSON.parse(readFileSync("migrations/pg/meta/_journal.json", "utf8")).entries.length as number;
const LOCK = lockNumber("public.langgraph_checkpoint_migrations");

/** Sessions waiting for the migrations' advisory lock. */
async function waiters(admin: postgres.Sql): Promise<number> {
  const [row] = await admin`select count(*)::int as n from pg_locks
    where locktype = 'advisory' and objid = ${LOCK} and not granted and database = (select oid from pg_database where datname = current_database())`;
  return row.n;
}

describe.each(["repeatable read", "serializable"])("setup() on PostgreSQL defaulting to %s", (level) => {
  it("lets callers that waited for the lock find the migrations applied, not apply them again", async () => {
    const url = await freshDatabaseUrl("postgres");
    const admin = postgres(url, { max: 2, onnotice: () => {} });
    const [{ db }] = await admin`select current_database() as db`;
    await admin.unsafe(`alter database "${db}" set default_transaction_isolation = '${level}'`);
    const opened = [await DrizzleSaver.fromUrl(url), await DrizzleStore.fromUrl(url), await DrizzleSaver.fromUrl(url)];
    try {
      // Hold the lock so that every caller starts its transaction and waits; released, one
      // of them migrates and the others take the lock after its commit.
      const released = admin.begin(async (tx) => {
        await tx`select pg_advisory_xact_lock(${LOCK})`;
        const started = Date.now();
        while ((await waiters(admin)) < opened.length && Date.now() - started < 30_000) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      });
      const setups = opened.map((target) =>
        target.setup().then(
          () => "ok",
          (error: unknown) => String(error),
        ),
      );
      await released;
      expect(await Promise.all(setups)).toEqual(opened.map(() => "ok"));
      const [row] = await admin`select count(*)::int as n from langgraph_checkpoint_migrations`;
      expect(row.n).toBe(MIGRATIONS);
    } finally {
      for (const target of opened) await target.close();
      await admin.end();
    }
  });
});
