import { uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SearchThreadsOptions } from "../../src/index.js";
import { serializeMetadata } from "../../src/savers/values/metadata.js";
import { openTestDatabase, type Row, type TestDatabase } from "../filters/database.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { threadBackfillSql } from "./backfill.js";

/**
 * Query plans of searchThreads and countThreads on a per-thread table of 20,000
 * threads (2 checkpoints each, loaded by bulk SQL, the thread rows by the
 * migration's backfill), each user_id on 20 of them. The SQL explained is the
 * saver's own, captured through drizzle's logger with its parameters.
 */

const THREADS = 20_000;
const USERS = 1_000;

interface Case {
  name: string;
  options: SearchThreadsOptions;
  /** PostgreSQL: an index of checkpoint_threads the plan must read. */
  pg: RegExp;
  /** MariaDB: the key EXPLAIN must show for checkpoint_threads. */
  mysql: string;
  /** SQLite: a line EXPLAIN QUERY PLAN must show. */
  sqlite: RegExp;
}

const CASES: Case[] = [
  {
    name: "a user's threads, newest first",
    options: { filter: { user_id: "u7" }, limit: 20 },
    pg: /checkpoint_threads_metadata_idx/,
    mysql: "checkpoint_threads_meta_user_id_idx",
    sqlite: /USING INDEX checkpoint_threads_meta_user_id_idx \(meta_user_id=\?\)/,
  },
  {
    name: "every thread, newest first",
    options: { limit: 20 },
    pg: /checkpoint_threads_updated_at_idx/,
    mysql: "checkpoint_threads_updated_at_idx",
    sqlite: /SCAN checkpoint_threads USING (COVERING )?INDEX checkpoint_threads_updated_at_idx/,
  },
  {
    name: "every thread, oldest created first, second page",
    options: { sortBy: "createdAt", order: "asc", limit: 20, offset: 20 },
    pg: /checkpoint_threads_created_at_idx/,
    mysql: "checkpoint_threads_created_at_idx",
    sqlite: /SCAN checkpoint_threads USING (COVERING )?INDEX checkpoint_threads_created_at_idx/,
  },
];

type Explained = { text: string; indexes: string[] };

async function explain(db: TestDatabase, dialect: DialectName, sql: string, params: unknown[]): Promise<Explained> {
  if (dialect === "postgres") {
    const [row] = await db.query(`explain (format json) ${sql}`, params);
    const plan = row["QUERY PLAN"];
    const text = typeof plan === "string" ? plan : JSON.stringify(plan);
    return { text, indexes: [...text.matchAll(/"Index Name": ?"([^"]+)"/g)].map((m) => m[1]) };
  }
  if (dialect === "mysql") {
    const rows: Row[] = await db.query(`explain ${sql}`, params);
    return {
      text: rows.map((r) => `${r.table} type=${r.type} key=${r.key} rows=${r.rows} ${r.Extra ?? ""}`).join("\n"),
      indexes: rows.map((r) => String(r.key)),
    };
  }
  const rows = await db.query(`explain query plan ${sql}`, params);
  return { text: rows.map((r) => String(r.detail)).join("\n"), indexes: [] };
}

describe.each(DIALECTS)("query plans of searchThreads and countThreads on %s", (dialect) => {
  let db: TestDatabase;
  const observed: string[] = [];

  beforeAll(async () => {
    const { saver, url } = await freshSaver(dialect);
    await saver.close();
    db = await openTestDatabase(dialect, url);
    const rows = [];
    for (let k = 0; k < 2; k++) {
      for (let i = 0; i < THREADS; i++) {
        const metadata = { source: "loop", step: k, parents: {}, user_id: `u${i % USERS}` };
        rows.push({ threadId: `thread-${i}`, checkpointId: uuid6(-1), metadataJson: serializeMetadata(metadata) });
      }
    }
    await db.insertCheckpoints(rows);
    await db.query(threadBackfillSql(dialect));
    await db.analyze();
    if (dialect === "postgres") await db.query("vacuum analyze checkpoint_threads");
  }, 180_000);

  afterAll(async () => {
    await db?.close();
    console.log(observed.join("\n"));
  });

  /** The one statement the saver sent for `run`, explained. */
  async function plan(run: () => Promise<unknown>): Promise<Explained> {
    db.statements.length = 0;
    db.capture = true;
    try {
      await run();
    } finally {
      db.capture = false;
    }
    expect(db.statements).toHaveLength(1);
    const [{ sql, params }] = db.statements;
    return explain(db, dialect, sql, params);
  }

  function expectIndexed(explained: Explained, c: Case, what: string): void {
    observed.push(`${dialect} ${what}:\n${explained.text}`);
    if (dialect === "postgres") {
      expect(
        explained.indexes.some((name) => c.pg.test(name)),
        explained.text,
      ).toBe(true);
      expect(explained.text).not.toMatch(/"Node Type": "Seq Scan"/);
    } else if (dialect === "mysql") {
      expect(explained.indexes, explained.text).toContain(c.mysql);
      expect(explained.text).not.toMatch(/type=ALL/);
    } else {
      expect(explained.text).toMatch(c.sqlite);
      expect(explained.text).not.toMatch(/SCAN checkpoint_threads$/m);
    }
  }

  for (const c of CASES) {
    it(`searchThreads: ${c.name} is right and reads an index`, async () => {
      let found: string[] = [];
      const explained = await plan(async () => {
        found = (await db.saver.searchThreads(c.options)).map((t) => t.threadId);
      });
      expect(found).toHaveLength(20);
      if (c.options.filter) expect(found.every((id) => Number(id.slice(7)) % USERS === 7)).toBe(true);
      expectIndexed(explained, c, `searchThreads ${JSON.stringify(c.options)}`);
      // Unfiltered, the order comes from the index; PostgreSQL sorts a user's matches (the GIN index has no order).
      if (dialect === "sqlite") expect(explained.text).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
      else if (dialect === "mysql" || !c.options.filter) expect(explained.text).not.toMatch(/filesort|"Sort"/);
    });
  }

  it("countThreads of a user reads the user index", async () => {
    let n = 0;
    const explained = await plan(async () => {
      n = await db.saver.countThreads({ filter: { user_id: "u7" } });
    });
    expect(n).toBe(THREADS / USERS);
    expectIndexed(explained, CASES[0], "countThreads { user_id }");
  });
});
