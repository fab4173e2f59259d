/**
 * The queries that fetch a page of checkpoints with their pending writes and blobs (one
 * statement where the dialect can name the blobs in SQL, else a few plain ones by key),
 * and the page's rows sorted by kind for read.ts to build tuples from.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Dialect, Row } from "../../dialects/dialect.js";
import { parameterLimit } from "../../sql/executor.js";
import type { Statement, Templates, Values } from "../../sql/statements.js";
import { blobKey } from "../values/delta-read.js";
import { as, keyOf, parseJsonColumn, rowKey, tupleKey } from "../values/values.js";

/**
 * Checkpoints, writes and blobs of a page in one query, where the dialect can name the
 * blobs in SQL; `withBases`: also the bases of its incremental values (see
 * Dialect.chainBaseBlobs), asked for by pages of up to PAGE_WITH_BASES checkpoints (read.ts).
 */
export async function queryPageAtOnce(
  dialect: Dialect,
  templates: Templates,
  page: () => SQL,
  values: Values,
  key: string | undefined,
  withBases: boolean,
): Promise<Row[]> {
  const { blobs: b, writes: w } = dialect.columns;
  // The bases of the page's incremental values, in the same statement (else delta-read.ts fetches them).
  const basesBranch = () =>
    dialect.chainBaseBlobs && withBases
      ? sql`
    union all
    select 'blob', null, base_blob.thread_id, base_blob.checkpoint_ns, null, null, base_blob.type, base_blob.blob,
           null, base_blob.channel, base_blob.version, null, null, null, base_blob.delta_chain
    from ${dialect.chainBaseBlobs("page_blobs")}`
      : sql``;
  const build = () => sql`
    with page as (${page()}),
    page_blobs as (
      select page.ns_key as ns_key, page_blobs.thread_id, page_blobs.checkpoint_ns, page_blobs.channel,
             page_blobs.version, page_blobs.type, page_blobs.blob, page_blobs.delta_chain
      from ${dialect.pageBlobs?.(b)})
    select 'checkpoint' as ${sql.identifier("kind")}, page.position as ${sql.identifier("position")},
           page.thread_id as ${sql.identifier("thread_id")}, page.checkpoint_ns as ${sql.identifier("checkpoint_ns")},
           page.checkpoint_id as ${sql.identifier("checkpoint_id")},
           page.parent_checkpoint_id as ${sql.identifier("parent_checkpoint_id")},
           page.checkpoint_type as ${sql.identifier("type")}, page.checkpoint as ${sql.identifier("data")},
           page.metadata as ${sql.identifier("metadata")}, null as ${sql.identifier("channel")},
           null as ${sql.identifier("version")}, null as ${sql.identifier("task_id")}, null as ${sql.identifier("idx")},
           null as ${sql.identifier("task_path")}, null as ${sql.identifier("delta_chain")}
    from page
    union all
    -- Writes before blobs: PostgreSQL types a union's columns pair by pair, left to right.
    select 'write', null, ${w.threadId}, ${w.checkpointNs}, ${w.checkpointId}, null, ${w.type}, ${w.blob}, null,
           ${w.channel}, null, ${w.taskId}, ${w.idx}, ${w.taskPath}, null
    from page join ${w.table} on ${w.threadId} = page.thread_id and ${w.nsKey} = page.ns_key
      and ${w.checkpointId} = page.checkpoint_id
    union all
    select 'blob', null, page_blobs.thread_id, page_blobs.checkpoint_ns, null, null, page_blobs.type,
           page_blobs.blob, null, page_blobs.channel, page_blobs.version, null, null, null, page_blobs.delta_chain
    from page_blobs${basesBranch()}`;
  return dialect.query(templates.statement(key && `${key}.atOnce`, build, values));
}

/** The page's checkpoints, then their writes and blobs by key: two plain queries. */
export async function queryPageByKeys(dialect: Dialect, templates: Templates, page: Statement): Promise<Row[]> {
  const checkpoints = (await dialect.query(page)).map(
    (row): Row => ({
      ...row,
      kind: "checkpoint",
      type: row.checkpoint_type,
      data: row.checkpoint,
    }),
  );
  const groups = new Map<string, Group>();
  for (const row of checkpoints) {
    const { threadId, ns, checkpointId } = rowKey(row);
    const groupKey = tupleKey([threadId, ns]);
    const group: Group = groups.get(groupKey) ?? { threadId, ns, ids: [], blobs: new Map() };
    groups.set(groupKey, group);
    group.ids.push(checkpointId);
    const versions = parseJsonColumn(row.channel_versions) as Record<string, unknown>;
    for (const [channel, version] of Object.entries(versions)) {
      group.blobs.set(tupleKey([channel, String(version)]), [channel, String(version)]);
    }
  }
  if (groups.size === 0) return [];
  const related: Row[] = [];
  // A driver with a lower limit (D1: 100) gets smaller pieces, so every key stays a bound parameter.
  const limit = parameterLimit(dialect.executor.limits);
  for (const piece of pieces([...groups.values()], limit)) {
    related.push(...(await relatedRows(dialect, templates, piece)));
  }
  return [...checkpoints, ...related];
}

/** The checkpoints of a page in one (thread, namespace), with the blobs they name. */
interface Group {
  threadId: string;
  ns: string;
  ids: string[];
  blobs: Map<string, [string, string]>;
}

/** Parameters of a group in the related query: thread and namespace twice, the ids, two per blob. */
const parametersOf = (group: Group) => 4 + group.ids.length + 2 * group.blobs.size;

/**
 * The groups in pieces of at most `limit` parameters; a group too large for one
 * statement is split by blobs, its ids (at most a page) in the first part.
 */
function pieces(groups: Group[], limit: number): Group[][] {
  const result: Group[][] = [];
  let current: Group[] = [];
  let used = 0;
  const add = (group: Group) => {
    const size = parametersOf(group);
    if (current.length > 0 && used + size > limit) {
      result.push(current);
      current = [];
      used = 0;
    }
    current.push(group);
    used += size;
  };
  for (const group of groups) {
    if (parametersOf(group) <= limit) {
      add(group);
      continue;
    }
    const blobs = [...group.blobs.entries()];
    const perPart = Math.max(1, Math.floor((limit - 4 - group.ids.length) / 2));
    for (let i = 0; i < blobs.length; i += perPart) {
      add({ ...group, ids: i === 0 ? group.ids : [], blobs: new Map(blobs.slice(i, i + perPart)) });
    }
  }
  result.push(current);
  return result;
}

/** Writes and blobs of some groups of a page, in one statement. */
async function relatedRows(dialect: Dialect, templates: Templates, list: Group[]): Promise<Row[]> {
  const { blobs: b, writes: w } = dialect.columns;
  // The statement's shape is the number of checkpoints and blobs per (thread, namespace).
  const values: Values = {};
  list.forEach((g, i) => {
    values[`g${i}.thread`] = g.threadId;
    values[`g${i}.ns`] = dialect.nsKey(g.ns);
    g.ids.forEach((id, k) => {
      values[`g${i}.id${k}`] = id;
    });
    [...g.blobs.values()].forEach(([channel, version], k) => {
      values[`g${i}.channel${k}`] = channel;
      values[`g${i}.version${k}`] = version;
    });
  });
  const shape = list.map((g) => `${g.ids.length}/${g.blobs.size}`).join(",");
  const build = () => {
    const p = sql.placeholder;
    const commas = (items: SQL[]) => sql.join(items, sql`, `);
    const writeKeys = list.flatMap((g, i) =>
      g.ids.length === 0
        ? []
        : [
            sql`(${w.threadId} = ${p(`g${i}.thread`)} and ${w.nsKey} = ${p(`g${i}.ns`)} and ${w.checkpointId} in (${commas(g.ids.map((_, k) => sql`${p(`g${i}.id${k}`)}`))}))`,
          ],
    );
    const blobKeys = list.flatMap((g, i) =>
      g.blobs.size === 0
        ? []
        : [
            sql`(${b.threadId} = ${p(`g${i}.thread`)} and ${b.nsKey} = ${p(`g${i}.ns`)} and (${b.channel}, ${b.version}) in (${commas([...g.blobs.keys()].map((_, k) => sql`(${p(`g${i}.channel${k}`)}, ${p(`g${i}.version${k}`)})`))}))`,
          ],
    );
    const { head, branch } = blobsBranch(dialect, blobKeys);
    return sql`${head}
    select 'write' as ${sql.identifier("kind")}, ${as(w.threadId, "thread_id")}, ${as(w.checkpointNs, "checkpoint_ns")},
           ${as(w.checkpointId, "checkpoint_id")}, ${as(w.type, "type")}, ${as(w.blob, "data")},
           ${as(w.channel, "channel")}, null as ${sql.identifier("version")}, ${as(w.taskId, "task_id")},
           ${as(w.idx, "idx")}, ${as(w.taskPath, "task_path")}, null as ${sql.identifier("delta_chain")}
    from ${w.table} where ${writeKeys.length === 0 ? sql`1 = 0` : sql.join(writeKeys, sql` or `)}${branch}`;
  };
  return dialect.query(templates.statement(`related.${shape}`, build, values));
}

/**
 * The union branch of the blobs the page names (`blobKeys`), and with the dialect's
 * chainBaseBlobs the branch of the bases their deltas extend: the named blobs are then
 * a CTE (`head`, put before the statement) that both branches read.
 */
function blobsBranch(dialect: Dialect, blobKeys: SQL[]): { head: SQL; branch: SQL } {
  const b = dialect.columns.blobs;
  if (blobKeys.length === 0) return { head: sql``, branch: sql`` };
  const named = sql.join(blobKeys, sql` or `);
  if (!dialect.chainBaseBlobs) {
    return {
      head: sql``,
      branch: sql` union all
    select 'blob', ${b.threadId}, ${b.checkpointNs}, null, ${b.type}, ${b.blob}, ${b.channel}, ${b.version},
           null, null, null, ${b.deltaChain}
    from ${b.table} where ${named}`,
    };
  }
  return {
    head: sql`with page_head as (
      select ${as(b.threadId, "thread_id")}, ${as(b.checkpointNs, "checkpoint_ns")}, ${as(b.nsKey, "ns_key")},
             ${as(b.channel, "channel")}, ${as(b.version, "version")}, ${as(b.type, "type")}, ${as(b.blob, "blob")},
             ${as(b.deltaChain, "delta_chain")}
      from ${b.table} where ${named})`,
    branch: sql` union all
    select 'blob', thread_id, checkpoint_ns, null, type, blob, channel, version, null, null, null, delta_chain
    from page_head
    union all
    select 'blob', base_blob.thread_id, base_blob.checkpoint_ns, null, base_blob.type, base_blob.blob, base_blob.channel,
           base_blob.version, null, null, null, base_blob.delta_chain
    from ${dialect.chainBaseBlobs("page_head")}`,
  };
}

/** The statement of a page's checkpoint rows, newest first, with their position in the page. */
export function pageQuery(dialect: Dialect, where: SQL, limit: number, oneThreadAndNamespace: boolean): SQL {
  const c = dialect.columns.checkpoints;
  const orderOf = (id: SQL, thread: SQL, ns: SQL) =>
    oneThreadAndNamespace ? sql`${id} desc` : sql`${id} desc, ${thread} desc, ${ns} desc`;
  const rows = (position: SQL) => sql`
      select ${c.threadId} as thread_id, ${c.checkpointNs} as checkpoint_ns, ${c.nsKey} as ns_key,
             ${c.checkpointId} as checkpoint_id, ${c.parentCheckpointId} as parent_checkpoint_id,
             ${c.checkpointType} as checkpoint_type, ${c.checkpoint} as checkpoint,
             ${c.channelVersions} as channel_versions, ${c.metadata} as metadata${position}
      from ${c.table} where ${where}
      order by ${orderOf(sql`${c.checkpointId}`, sql`${c.threadId}`, sql`${c.checkpointNs}`)}
      limit ${sql.raw(String(limit))}`;
  if (limit === 1) return rows(sql`, 1 as position`);
  // Numbered once the limit has applied: a window function over the table made MySQL and
  // MariaDB number every matching row first (a whole thread for a page of ten).
  const order = orderOf(
    sql.raw("page_rows.checkpoint_id"),
    sql.raw("page_rows.thread_id"),
    sql.raw("page_rows.checkpoint_ns"),
  );
  return sql`select page_rows.*, row_number() over (order by ${order}) as position from (${rows(sql``)}) as page_rows`;
}

/** A page's rows by kind: its checkpoints in page order, its blobs by key, its writes by checkpoint. */
export function groupPageRows(rows: Row[]) {
  const checkpointRows = rows
    .filter((row) => row.kind === "checkpoint")
    .sort((x, y) => Number(x.position) - Number(y.position));
  const blobs = new Map<string, Row>();
  const writes = new Map<string, Row[]>();
  for (const row of rows) {
    if (row.kind === "blob") {
      blobs.set(blobKey(row.thread_id, row.checkpoint_ns, row.channel, row.version), row);
    } else if (row.kind === "write") {
      const key = keyOf(rowKey(row));
      const list = writes.get(key);
      if (list) list.push(row);
      else writes.set(key, [row]);
    }
  }
  return { checkpointRows, blobs, writes };
}
