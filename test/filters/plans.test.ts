import { uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serializeMetadata } from "../../src/savers/values/metadata.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import {
  type LoggedStatement,
  openTestDatabase,
  type RawCheckpointRow,
  type Row,
  type TestDatabase,
} from "./database.js";
import { type Filter, type JsonObject, matchesFilter } from "./reference.js";

/**
 * Query plans of metadata-filtered `list` on a realistically sized table. The SQL
 * explained is the saver's own: the saver runs over a drizzle instance with a
 * logger (test/filters/database.ts) and the statement it sent is explained with
 * the parameters it bound.
 *
 * Data: 1,000 threads x 52 checkpoints = 52,000 rows (plus one idle thread), each
 * with one channel value in checkpoint_blobs and one pending write, metadata
 * { source, step, user: "u<thread % 100>", parents: {} }: per thread one "input"
 * (step -1), one "update" (2% of all rows), the rest "loop"; each step value is 2%
 * of the rows, each user 1%. So { user: "u7", step: 3 } selects 10 rows and
 * { source: "update" } 1,000: both selective enough that an index must be used.
 */

const THREADS = 1_000;
const PER_THREAD = 52;
const UPDATE_AT = 25;

function metadataOf(thread: number, k: number): JsonObject {
  const source = k === 0 ? "input" : k === UPDATE_AT ? "update" : "loop";
  return { source, step: k - 1, user: `u${thread % 100}`, parents: {} };
}

interface Generated {
  threadId: string;
  checkpointId: string;
  metadata: JsonObject;
}

/** A thread whose checkpoints are all older than everything else (it has been idle since). */
const IDLE_THREAD = "idle-thread";

function generate(): Generated[] {
  const rows: Generated[] = [0, 1, 2].map((k) => ({
    threadId: IDLE_THREAD,
    checkpointId: uuid6(-1),
    metadata: metadataOf(THREADS + 7, k),
  }));
  // Step by step across all threads, so ids (time-ordered) interleave threads as in real use.
  for (let k = 0; k < PER_THREAD; k++) {
    for (let thread = 0; thread < THREADS; thread++) {
      rows.push({ threadId: `thread-${thread}`, checkpointId: uuid6(-1), metadata: metadataOf(thread, k) });
    }
  }
  return rows;
}

/** The statement(s) the saver sends for one call. */
async function captured(db: TestDatabase, run: () => Promise<unknown>): Promise<LoggedStatement[]> {
  db.statements.length = 0;
  db.capture = true;
  try {
    await run();
  } finally {
    db.capture = false;
  }
  return [...db.statements];
}

/**
 * The first `take` ids `list` yields. Without `limit` the saver reads pages of 100,
 * so stopping early sends just the first page's query: the common unlimited call.
 */
async function listIds(
  db: TestDatabase,
  threadId: string | undefined,
  options: { filter?: Filter; limit?: number },
  take: number,
): Promise<string[]> {
  const ids: string[] = [];
  const configurable = threadId === undefined ? {} : { thread_id: threadId };
  for await (const tuple of db.saver.list({ configurable }, options)) {
    ids.push(String(tuple.config.configurable?.checkpoint_id));
    if (ids.length === take) break;
  }
  return ids;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const result: T[] = [];
  for await (const item of items) result.push(item);
  return result;
}

/** The saver's query that reads the checkpoints table (one page: its first such statement). */
function checkpointSelect(statements: LoggedStatement[]): LoggedStatement {
  const select = statements.find(
    (s) => /^\s*(select|with)\b/i.test(s.sql) && /\bfrom\s+[`"]?checkpoints[`"]?(\s|$)/i.test(s.sql),
  );
  if (!select) throw new Error(`no select on checkpoints among:\n${statements.map((s) => s.sql).join("\n")}`);
  return select;
}

// ---- PostgreSQL plans (EXPLAIN (FORMAT JSON)) ----

interface PgPlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  Filter?: string;
  "Subplans Removed"?: number;
  Plans?: PgPlanNode[];
}

function pgNodes(node: PgPlanNode): PgPlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(pgNodes)];
}

function pgPlanText(node: PgPlanNode, depth = 0): string {
  const on = node["Relation Name"] === undefined ? "" : ` on ${node["Relation Name"]}`;
  const using = node["Index Name"] === undefined ? "" : ` using ${node["Index Name"]}`;
  return [
    `${"  ".repeat(depth)}${node["Node Type"]}${on}${using}${node["Index Cond"] ? ` [${node["Index Cond"]}]` : ""}${node.Filter ? ` filter ${node.Filter}` : ""}`,
    ...(node.Plans ?? []).map((child) => pgPlanText(child, depth + 1)),
  ].join("\n");
}

async function pgExplain(db: TestDatabase, statement: LoggedStatement): Promise<PgPlanNode> {
  const [row] = await db.query(`explain (format json) ${statement.sql}`, statement.params);
  const plan = row["QUERY PLAN"];
  const parsed = (typeof plan === "string" ? JSON.parse(plan) : plan) as [{ Plan: PgPlanNode }];
  return parsed[0].Plan;
}

const CHECKPOINT_TABLE = /^checkpoints(_p\d+)?$/;
const PG_METADATA_INDEX = /^checkpoints(_p\d+)?_metadata_idx$/;

/** Every scan of the checkpoints table (or a partition) is a bitmap heap scan fed by the GIN metadata index. */
function expectPgMetadataIndex(plan: PgPlanNode): void {
  const text = pgPlanText(plan);
  const scans = pgNodes(plan).filter((node) => CHECKPOINT_TABLE.test(node["Relation Name"] ?? ""));
  expect(scans.length, text).toBeGreaterThan(0);
  for (const scan of scans) {
    expect(scan["Node Type"], `${scan["Relation Name"]} in\n${text}`).toBe("Bitmap Heap Scan");
    const indexes = pgNodes(scan)
      .filter((node) => node["Node Type"] === "Bitmap Index Scan")
      .map((node) => node["Index Name"] ?? "");
    expect(
      indexes.some((name) => PG_METADATA_INDEX.test(name)),
      `${scan["Relation Name"]} via ${indexes.join(", ")} in\n${text}`,
    ).toBe(true);
  }
  expect(text, text).not.toMatch(/Seq Scan on checkpoints(_p\d+)?\b/);
}

// ---- MariaDB / MySQL plans (EXPLAIN PARTITIONS) ----

function mysqlPlanText(rows: Row[]): string {
  return rows
    .map((r) => `${r.table} type=${r.type} key=${r.key} partitions=${r.partitions} rows=${r.rows} ${r.Extra ?? ""}`)
    .join("\n");
}

async function mysqlExplain(db: TestDatabase, statement: LoggedStatement): Promise<Row[]> {
  return db.query(`explain partitions ${statement.sql}`, statement.params);
}

// ---- SQLite plans (EXPLAIN QUERY PLAN) ----

async function sqliteExplain(db: TestDatabase, statement: LoggedStatement): Promise<string[]> {
  const rows = await db.query(`explain query plan ${statement.sql}`, statement.params);
  return rows.map((row) => String(row.detail));
}

const FILTERS: { filter: Filter; mysqlIndex: string; sqliteIndex: string }[] = [
  {
    filter: { user: "u7", step: 3 },
    // 1% of the rows by user against 2% by step: the side table's index is the narrower.
    mysqlIndex: "checkpoint_metadata_value_idx",
    sqliteIndex: "checkpoints_meta_step_idx",
  },
  {
    filter: { source: "update" },
    mysqlIndex: "checkpoints_meta_source_idx",
    sqliteIndex: "checkpoints_meta_source_idx",
  },
];

describe.each(DIALECTS)("query plans of filtered list on %s", (dialect: DialectName) => {
  let db: TestDatabase;
  let generated: Generated[] = [];
  /** Plans seen, printed once at the end (useful when reading a run's log). */
  const observed: string[] = [];

  beforeAll(async () => {
    const started = Date.now();
    const { saver, url } = await freshSaver(dialect);
    await saver.close();
    db = await openTestDatabase(dialect, url);
    generated = generate();
    const rows: RawCheckpointRow[] = generated.map((g) => ({
      threadId: g.threadId,
      checkpointId: g.checkpointId,
      metadataJson: serializeMetadata(g.metadata),
      withValues: true,
    }));
    await db.insertCheckpoints(rows);
    await db.analyze();
    if (dialect === "postgres") {
      // A GIN index with fastupdate (the default) keeps rows inserted since the last
      // VACUUM in a pending list, which ANALYZE does not merge: right after this bulk
      // load all 52,000 entries are pending, the planner prices the index as a scan of
      // that list and picks a Seq Scan for { source: "update" }. Autovacuum merges it
      // in a live database (and inserts merge it past gin_pending_list_limit); VACUUM
      // does the same here, so the plans are those of the steady state.
      await db.query("vacuum checkpoints, checkpoint_blobs, checkpoint_writes");
    }
    observed.push(`${dialect}: loaded ${rows.length} rows and analyzed in ${Date.now() - started} ms`);
  }, 180_000);

  afterAll(async () => {
    await db?.close();
    console.log(observed.join("\n"));
  });

  it("holds the generated rows", async () => {
    const [row] = await db.query("select count(*) as n from checkpoints");
    expect(Number(row.n)).toBe(THREADS * PER_THREAD + 3);
    // Each checkpoint has one channel value and one pending write, loaded with it.
    const [tuple] = await collect(db.saver.list({ configurable: { thread_id: "thread-7" } }, { limit: 1 }));
    expect(tuple.checkpoint.channel_values).toEqual({ messages: [{ role: "user", content: "hello" }] });
    expect(tuple.pendingWrites).toEqual([["task-1", "messages", [{ role: "user", content: "hello" }]]]);
  });

  for (const { filter, mysqlIndex, sqliteIndex } of FILTERS) {
    it(`a cross-thread filter ${JSON.stringify(filter)} returns the right rows and uses the metadata index`, async () => {
      // The saver's result on this data is right (newest first)...
      const expected = generated
        .filter((g) => matchesFilter(g.metadata, filter))
        .map((g) => g.checkpointId)
        .sort()
        .reverse();
      let ids: string[] = [];
      const statements = await captured(db, async () => {
        ids = await listIds(db, undefined, { filter }, 20);
      });
      expect(ids).toEqual(expected.slice(0, 20));
      // ...and its query reads the index rather than the whole table.
      const select = checkpointSelect(statements);
      if (dialect === "postgres") {
        const plan = await pgExplain(db, select);
        observed.push(`postgres ${JSON.stringify(filter)}:\n${pgPlanText(plan)}`);
        expectPgMetadataIndex(plan);
      } else if (dialect === "mysql") {
        const plan = await mysqlExplain(db, select);
        const text = mysqlPlanText(plan);
        observed.push(`mysql ${JSON.stringify(filter)}:\n${text}`);
        // Every read of the checkpoints table (the page may be read more than once) goes through the
        // index, or by primary key from the side table's index (keys without a generated column).
        const onCheckpoints = plan.filter((r) => r.table === "checkpoints");
        expect(onCheckpoints.length, text).toBeGreaterThan(0);
        for (const scan of plan.filter((r) => r.table === "checkpoints" || r.table === "checkpoint_metadata")) {
          expect(scan.key, text).toBe(scan.type === "eq_ref" ? "PRIMARY" : mysqlIndex);
          expect(scan.type, text).not.toBe("ALL");
          expect(scan.type, text).not.toBe("index");
        }
      } else {
        const plan = await sqliteExplain(db, select);
        const text = plan.join("\n");
        observed.push(`sqlite ${JSON.stringify(filter)}:\n${text}`);
        expect(text, text).toMatch(new RegExp(`SEARCH checkpoints USING (COVERING )?INDEX ${sqliteIndex} \\(meta_`));
        expect(text, text).not.toMatch(/SCAN checkpoints\b/);
      }
    });
  }

  it("a thread-scoped history query touches one partition only (PostgreSQL, MariaDB)", async () => {
    const threadId = "thread-7";
    const expected = generated
      .filter((g) => g.threadId === threadId)
      .map((g) => g.checkpointId)
      .sort()
      .reverse();
    let ids: string[] = [];
    const statements = await captured(db, async () => {
      ids = await listIds(db, threadId, { limit: 1 }, 1);
    });
    expect(ids).toEqual(expected.slice(0, 1));
    const select = checkpointSelect(statements);
    if (dialect === "postgres") {
      const [own] = await db.query(
        "select tableoid::regclass::text as partition from checkpoints where thread_id = $1 limit 1",
        [threadId],
      );
      const plan = await pgExplain(db, select);
      const text = pgPlanText(plan);
      observed.push(`postgres thread-scoped list (partition ${own.partition}):\n${text}`);
      const partitions = new Set(
        pgNodes(plan)
          .map((node) => node["Relation Name"] ?? "")
          .filter((name) => CHECKPOINT_TABLE.test(name)),
      );
      expect([...partitions], text).toEqual([own.partition]);
    } else if (dialect === "mysql") {
      const plan = await mysqlExplain(db, select);
      const text = mysqlPlanText(plan);
      observed.push(`mysql thread-scoped list:\n${text}`);
      const onCheckpoints = plan.filter((r) => r.table === "checkpoints");
      expect(onCheckpoints.length, text).toBeGreaterThan(0);
      for (const scan of onCheckpoints) {
        expect(String(scan.partitions).split(","), text).toHaveLength(1);
        expect(scan.type, text).not.toBe("ALL");
      }
    } else {
      // SQLite has no partitions: the primary key serves the thread.
      const plan = await sqliteExplain(db, select);
      const text = plan.join("\n");
      observed.push(`sqlite thread-scoped list:\n${text}`);
      expect(text, text).toMatch(/SEARCH checkpoints USING (PRIMARY KEY|(COVERING )?INDEX \w+) \(thread_id=/);
      expect(text, text).not.toMatch(/SCAN checkpoints\b/);
    }
  });

  it("an idle thread's newest checkpoint is found through an index on thread_id, not by walking newer rows", async () => {
    // Its checkpoints are the oldest of the table: a plan that walks checkpoint_id
    // backwards and filters on thread_id reads the whole partition before finding them.
    const expected = generated.filter((g) => g.threadId === IDLE_THREAD).map((g) => g.checkpointId);
    let ids: string[] = [];
    const statements = await captured(db, async () => {
      ids = await listIds(db, IDLE_THREAD, { limit: 1 }, 1);
    });
    expect(ids).toEqual([expected[2]]);
    const select = checkpointSelect(statements);
    if (dialect === "postgres") {
      const plan = await pgExplain(db, select);
      const text = pgPlanText(plan);
      observed.push(`postgres idle-thread list:\n${text}`);
      const scans = pgNodes(plan).filter((node) => CHECKPOINT_TABLE.test(node["Relation Name"] ?? ""));
      expect(scans.length, text).toBeGreaterThan(0);
      for (const scan of scans) {
        const conditions = pgNodes(scan).map((node) => node["Index Cond"] ?? "");
        expect(
          conditions.some((condition) => condition.includes("thread_id")),
          `${scan["Relation Name"]} is not read through an index on thread_id:\n${text}`,
        ).toBe(true);
      }
    } else if (dialect === "mysql") {
      const plan = await mysqlExplain(db, select);
      const text = mysqlPlanText(plan);
      observed.push(`mysql idle-thread list:\n${text}`);
      const leading = await db.query(
        "select index_name as index_name from information_schema.statistics where table_schema = database() and table_name = 'checkpoints' and seq_in_index = 1 and column_name = 'thread_id'",
      );
      const threadIndexes = leading.map((r) => String(r.index_name));
      const onCheckpoints = plan.filter((r) => r.table === "checkpoints");
      expect(onCheckpoints.length, text).toBeGreaterThan(0);
      for (const scan of onCheckpoints) {
        expect(threadIndexes, text).toContain(String(scan.key));
        expect(scan.type, text).toBe("ref");
      }
    } else {
      const plan = await sqliteExplain(db, select);
      const text = plan.join("\n");
      observed.push(`sqlite idle-thread list:\n${text}`);
      expect(text, text).toMatch(/SEARCH checkpoints USING (PRIMARY KEY|(COVERING )?INDEX \w+) \(thread_id=/);
    }
  });

  const PAGE_QUERIES: { name: string; threadId?: string; filter?: Filter; limit?: number }[] = [
    { name: "cross-thread filter { user, step }", filter: { user: "u7", step: 3 } },
    { name: "cross-thread filter { source }", filter: { source: "update" } },
    { name: "thread-scoped list", threadId: "thread-7", limit: 1 },
  ];
  it.each(PAGE_QUERIES)("$name reads the page's channel values and pending writes by key", async (query) => {
    const statements = await captured(db, async () => {
      await listIds(db, query.threadId, { filter: query.filter, limit: query.limit }, 20);
    });
    const select = checkpointSelect(statements);
    const sideTables = /^checkpoint_(blobs|writes)(_p\d+)?$/;
    if (dialect === "postgres") {
      const plan = await pgExplain(db, select);
      const text = pgPlanText(plan);
      observed.push(`postgres ${query.name}, blobs and writes:\n${text}`);
      const seqScans = pgNodes(plan)
        .filter((node) => node["Node Type"] === "Seq Scan" && sideTables.test(node["Relation Name"] ?? ""))
        .map((node) => node["Relation Name"]);
      expect(seqScans, text).toEqual([]);
    } else if (dialect === "mysql") {
      const plan = await mysqlExplain(db, select);
      const text = mysqlPlanText(plan);
      observed.push(`mysql ${query.name}, blobs and writes:\n${text}`);
      const full = plan.filter((r) => sideTables.test(String(r.table)) && (r.type === "ALL" || r.type === "index"));
      expect(full, text).toEqual([]);
    } else {
      const plan = await sqliteExplain(db, select);
      const text = plan.join("\n");
      observed.push(`sqlite ${query.name}, blobs and writes:\n${text}`);
      expect(text, text).not.toMatch(/SCAN checkpoint_(blobs|writes)\b/);
    }
  });

  // MariaDB has no multi-valued JSON index: other keys go through the checkpoint_metadata side table.
  it.skipIf(dialect !== "mysql")(
    "a cross-thread filter on a key without a generated column ({ user }) reads the side-table index, not the table",
    async () => {
      const filter = { user: "u7" };
      const expected = generated
        .filter((g) => matchesFilter(g.metadata, filter))
        .map((g) => g.checkpointId)
        .sort()
        .reverse();
      let ids: string[] = [];
      const statements = await captured(db, async () => {
        ids = await listIds(db, undefined, { filter }, 20);
      });
      expect(ids).toEqual(expected.slice(0, 20));
      const plan = await mysqlExplain(db, checkpointSelect(statements));
      const text = mysqlPlanText(plan);
      observed.push(`mysql ${JSON.stringify(filter)}:\n${text}`);
      const side = plan.filter((r) => r.table === "checkpoint_metadata");
      expect(side.length, text).toBeGreaterThan(0);
      for (const scan of side) expect(scan.key, text).toBe("checkpoint_metadata_value_idx");
      const onCheckpoints = plan.filter((r) => r.table === "checkpoints");
      expect(onCheckpoints.length, text).toBeGreaterThan(0);
      for (const scan of onCheckpoints) expect(["eq_ref", "ref"], text).toContain(scan.type);
    },
  );

  it.skipIf(dialect !== "mysql")(
    "getTuple of the latest checkpoint reads the thread's newest row through the primary key, without a sort",
    async () => {
      const statements = await captured(db, () => db.saver.getTuple({ configurable: { thread_id: "thread-7" } }));
      const plan = await mysqlExplain(db, checkpointSelect(statements));
      const text = mysqlPlanText(plan);
      observed.push(`mysql getTuple latest:\n${text}`);
      const onCheckpoints = plan.filter((r) => r.table === "checkpoints");
      expect(onCheckpoints.length, text).toBeGreaterThan(0);
      for (const scan of onCheckpoints) {
        expect(scan.key, text).toBe("PRIMARY");
        expect(String(scan.Extra), text).not.toMatch(/filesort/);
      }
    },
  );
});
