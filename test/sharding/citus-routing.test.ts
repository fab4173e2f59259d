import { getTableConfig } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { DrizzleSaver } from "../../src/index.js";
import { checkpointTables } from "../../src/schema/pg.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { writeThread } from "../spider/support.js";

/**
 * What a Citus deployment (docs/sharding.md) needs from the statements, checked on
 * every statement the saver sends to PostgreSQL over a representative workload,
 * captured with drizzle's logger: the three tables distributed by thread_id, a
 * per-thread operation routed to one shard, joins only on the thread key.
 */
const TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_threads"];
const TABLE = `"(${TABLES.join("|")})"`;

interface Captured {
  operation: string;
  /** Thread ids the operation is about; empty for cross-thread operations. */
  threads: string[];
  sql: string;
  params: unknown[];
}

const captured: Captured[] = [];
let url = "";

beforeAll(async () => {
  url = await freshDatabaseUrl("postgres");
  let current: Omit<Captured, "sql" | "params"> = { operation: "setup", threads: [] };
  const client = postgres(url, { max: 2, onnotice: () => {} });
  const saver = new DrizzleSaver(
    drizzle(client, {
      logger: { logQuery: (sql, params) => captured.push({ ...current, sql: sql.replace(/\s+/g, " "), params }) },
    }),
  );
  const run = async (operation: string, threads: string[], work: () => Promise<unknown>) => {
    current = { operation, threads };
    await work();
  };
  const drain = async (tuples: AsyncGenerator<unknown>) => {
    for await (const _ of tuples);
  };
  try {
    await saver.setup();
    await run("put, putWrites", ["a"], () => writeThread(saver, "a", 3, (step) => ({ run_id: `run-${step}` })));
    await run("put, putWrites", ["b"], () => writeThread(saver, "b", 3));
    await run("getTuple", ["a"], () => saver.getTuple({ configurable: { thread_id: "a" } }));
    await run("list one thread", ["a"], () => drain(saver.list({ configurable: { thread_id: "a" } }, { limit: 2 })));
    await run("list across threads", [], () => drain(saver.list({}, { filter: { source: "loop" }, limit: 2 })));
    await run("copyThread", ["a", "c"], () => saver.copyThread("a", "c"));
    await run("getDeltaChannelHistory", ["a"], () =>
      saver.getDeltaChannelHistory({ config: { configurable: { thread_id: "a" } }, channels: ["counter"] }),
    );
    await run("prune", ["a"], () => saver.prune(["a"]));
    await run("deleteThread", ["c"], () => saver.deleteThread("c"));
    await run("deleteForRuns", [], () => saver.deleteForRuns(["run-1"]));
    await run("pinThread", ["b"], () => saver.pinThread("b"));
    await run("sweep", [], () => saver.sweep({ idleFor: 1, strategy: "delete" }));
    await run("expireThreads", [], () => saver.expireThreads({ idleSince: new Date(Date.now() + 60_000) }));
  } finally {
    await client.end();
  }
});

/** The workload's statements on our tables (not the migrations' DDL and bookkeeping). */
const onOurTables = () =>
  captured.filter((c) => c.operation !== "setup" && new RegExp(`(from|join|into|update) ${TABLE}`).test(c.sql));

/** The placeholder of thread_id in every row of every insert (thread_id is always the first column). */
function insertedThreads(sql: string): string[] {
  const inserts = [...sql.matchAll(new RegExp(`insert into ${TABLE} \\(([^)]*)\\) (values|select) `, "g"))];
  return inserts.flatMap((insert, i) => {
    expect(insert[2].startsWith('"thread_id"')).toBe(true);
    const start = (insert.index ?? 0) + insert[0].length;
    const rest = sql.slice(start, inserts[i + 1]?.index ?? sql.length);
    if (insert[3] === "select") return [rest.split(",")[0].trim()];
    const body = rest.split(" on conflict ")[0];
    return [...body.matchAll(/\((\$\d+),/g)].map((m) => m[1]);
  });
}

const param = (c: Captured, placeholder: string) => c.params[Number(placeholder.slice(1)) - 1];

it("keeps thread_id in every unique key: primary keys and unique indexes, in the schema and in the database", async () => {
  for (const table of Object.values(checkpointTables())) {
    const config = getTableConfig(table);
    const keys = [
      // A single-column primary key is declared on its column (checkpoint_threads).
      ...config.columns.filter((column) => column.primary).map((column) => [column.name]),
      ...config.primaryKeys.map((key) => key.columns.map((column) => column.name)),
      ...config.uniqueConstraints.map((key) => key.columns.map((column) => column.name)),
      ...config.indexes.filter((index) => index.config.unique).map((index) => index.config.columns.map(String)),
    ];
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).toContain("thread_id");
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const unique = await sql`
      select c.relname as "table", i.indexrelid::regclass::text as "index",
        array(select a.attname::text from pg_attribute a where a.attrelid = i.indrelid and a.attnum = any(i.indkey)) as "columns"
      from pg_index i join pg_class c on c.oid = i.indrelid
      where i.indisunique and c.relname like any(${TABLES.map((t) => `${t}%`)})`;
    expect(unique.length).toBeGreaterThanOrEqual(3);
    for (const row of unique) expect(row.columns, `${row.index}`).toContain("thread_id");
  } finally {
    await sql.end();
  }
});

it("gives every table reference of a per-thread statement an equality on that thread's id", () => {
  const perThread = onOurTables().filter((c) => c.threads.length > 0);
  expect(perThread.filter((c) => insertedThreads(c.sql).length > 0).map((c) => c.operation)).toContain("copyThread");
  expect(new Set(perThread.map((c) => c.operation)).size).toBe(8);
  for (const c of perThread) {
    const where = `${c.operation}: ${c.sql}`;
    const references = [...c.sql.matchAll(new RegExp(`(from|join|update) ${TABLE}`, "g"))].length;
    // "t"."thread_id" = $n (the operation's thread), or = <cte>.thread_id (a join on the thread key).
    const bound = [...c.sql.matchAll(new RegExp(`${TABLE}\\."thread_id" = (\\$\\d+)`, "g"))];
    const joined = [...c.sql.matchAll(new RegExp(`${TABLE}\\."thread_id" = \\w+\\.thread_id`, "g"))];
    expect(bound.length + joined.length, where).toBeGreaterThanOrEqual(references);
    expect(bound.length + insertedThreads(c.sql).length, where).toBeGreaterThan(0);
    for (const match of bound) expect(c.threads, where).toContain(param(c, match[2]));
    // Rows inserted go to the operation's thread: thread_id is the first column inserted.
    for (const first of insertedThreads(c.sql)) expect(c.threads, where).toContain(param(c, first));
  }
});

it("joins our tables only on the thread key, and fans out only the cross-thread scans", () => {
  let joins = 0;
  for (const c of onOurTables()) {
    const where = `${c.operation}: ${c.sql}`;
    // Every join condition starts with the joined table's thread_id.
    for (const join of c.sql.matchAll(new RegExp(`join ${TABLE} on ([^ ]+) = ([^ ]+)`, "g"))) {
      expect(join[2], where).toBe(`"${join[1]}"."thread_id"`);
      joins += 1;
    }
    // Implicit joins (several of our tables in one FROM) would join without a key.
    expect(c.sql, where).not.toMatch(new RegExp(`from ${TABLE}( as \\w+)?, ${TABLE}`));
  }
  expect(joins).toBeGreaterThan(0);
  // Statements that neither name a thread id nor insert one: the scans that find threads.
  const fanOut = onOurTables().filter(
    (c) => !new RegExp(`${TABLE}\\."thread_id" = \\$\\d+`).test(c.sql) && insertedThreads(c.sql).length === 0,
  );
  expect(new Set(fanOut.map((c) => c.operation))).toEqual(
    new Set(["list across threads", "deleteForRuns", "expireThreads", "sweep"]),
  );
  expect(fanOut.map((c) => c.sql).every((sql) => /^ ?(with|select)/.test(sql))).toBe(true);
});
