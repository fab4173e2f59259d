import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { HistoryWriter, openRaw } from "../lifecycle/support.js";
import { ageThreads } from "./support.js";

/**
 * A sweep finds idle threads through the (updated_at, thread_id) index of
 * checkpoint_threads, a range ending at the cut-off: never a scan of every thread.
 * SQLite's plan of the statement the saver sent (its planner is deterministic).
 */
it("sweep reads idle threads through the (updated_at, thread_id) index", async () => {
  const url = await freshDatabaseUrl("sqlite");
  const statements: { sql: string; params: unknown[] }[] = [];
  const sqlite = new Database(url);
  const saver = new DrizzleSaver(
    drizzle(sqlite, { logger: { logQuery: (sql, params) => statements.push({ sql, params }) } }),
  );
  try {
    await saver.setup();
    const ids = Array.from({ length: 30 }, (_, i) => `index-${i}`);
    for (const id of ids) await new HistoryWriter(saver, id).chain(2);
    const raw = await openRaw("sqlite", url);
    await ageThreads(raw, ids.slice(0, 10), 48);
    await raw.close();
    sqlite.exec("analyze");
    statements.length = 0;
    expect((await saver.sweep({ idleFor: "1d", strategy: "delete", batchSize: 4 })).deleted).toBe(10);
    const scans = statements.filter((s) => /order by "checkpoint_threads"\."updated_at"/.test(s.sql));
    // Three batches of ids (4, 4, 2), the later ones after a cursor.
    expect(scans.length).toBe(3);
    for (const scan of scans) {
      const plan = sqlite
        .prepare(`explain query plan ${scan.sql}`)
        .all(...scan.params)
        .map((row) => String((row as { detail: string }).detail));
      expect(plan.join("\n")).toMatch(/USING (COVERING )?INDEX checkpoint_threads_updated_at_idx/);
      expect(plan.join("\n")).not.toMatch(/^SCAN checkpoint_threads$/m);
      expect(plan.join("\n")).not.toMatch(/TEMP B-TREE/);
    }
  } finally {
    sqlite.close();
  }
});
