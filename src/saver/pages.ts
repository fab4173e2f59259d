import { type SQL, sql } from "drizzle-orm";
import type { Dialect, Row } from "../dialects/dialect.js";
import type { Statement, Templates, Values } from "./statements.js";
import { as, parseJsonColumn, rowKey } from "./values.js";

/** Checkpoints, writes and blobs of a page in one query, where the dialect can name the blobs in SQL. */
export async function queryPageAtOnce(
  dialect: Dialect,
  templates: Templates,
  page: () => SQL,
  values: Values,
  key: string | undefined,
): Promise<Row[]> {
  const { blobs: b, writes: w } = dialect.columns;
  const build = () => sql`
    with page as (${page()})
    select 'checkpoint' as ${sql.identifier("kind")}, page.position as ${sql.identifier("position")},
           page.thread_id as ${sql.identifier("thread_id")}, page.checkpoint_ns as ${sql.identifier("checkpoint_ns")},
           page.checkpoint_id as ${sql.identifier("checkpoint_id")},
           page.parent_checkpoint_id as ${sql.identifier("parent_checkpoint_id")},
           page.checkpoint_type as ${sql.identifier("type")}, page.checkpoint as ${sql.identifier("data")},
           page.metadata as ${sql.identifier("metadata")}, null as ${sql.identifier("channel")},
           null as ${sql.identifier("version")}, null as ${sql.identifier("task_id")}, null as ${sql.identifier("idx")},
           null as ${sql.identifier("task_path")}
    from page
    union all
    -- Writes before blobs: PostgreSQL types a union's columns pair by pair, left to right.
    select 'write', null, ${w.threadId}, ${w.checkpointNs}, ${w.checkpointId}, null, ${w.type}, ${w.blob}, null,
           ${w.channel}, null, ${w.taskId}, ${w.idx}, ${w.taskPath}
    from page join ${w.table} on ${w.threadId} = page.thread_id and ${w.nsKey} = page.ns_key
      and ${w.checkpointId} = page.checkpoint_id
    union all
    select 'blob', null, page_blobs.thread_id, page_blobs.checkpoint_ns, null, null, page_blobs.type,
           page_blobs.blob, null, page_blobs.channel, page_blobs.version, null, null, null
    from ${dialect.pageBlobs?.(b)}`;
  return dialect.query(templates.statement(key && `${key}.atOnce`, build, values));
}

/** The page's checkpoints, then their writes and blobs by key: two plain queries. */
export async function queryPageByKeys(dialect: Dialect, templates: Templates, page: Statement): Promise<Row[]> {
  const { blobs: b, writes: w } = dialect.columns;
  const checkpoints = (await dialect.query(page)).map(
    (row): Row => ({
      ...row,
      kind: "checkpoint",
      type: row.checkpoint_type,
      data: row.checkpoint,
    }),
  );
  interface Group {
    threadId: string;
    ns: string;
    ids: string[];
    blobs: Map<string, [string, string]>;
  }
  const groups = new Map<string, Group>();
  for (const row of checkpoints) {
    const { threadId, ns, checkpointId } = rowKey(row);
    const groupKey = JSON.stringify([threadId, ns]);
    const group: Group = groups.get(groupKey) ?? { threadId, ns, ids: [], blobs: new Map() };
    groups.set(groupKey, group);
    group.ids.push(checkpointId);
    const versions = parseJsonColumn(row.channel_versions) as Record<string, unknown>;
    for (const [channel, version] of Object.entries(versions)) {
      group.blobs.set(JSON.stringify([channel, String(version)]), [channel, String(version)]);
    }
  }
  if (groups.size === 0) return [];

  // The statement's shape is the number of checkpoints and blobs per (thread, namespace).
  const list = [...groups.values()];
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
    const writeKeys = list.map(
      (g, i) =>
        sql`(${w.threadId} = ${p(`g${i}.thread`)} and ${w.nsKey} = ${p(`g${i}.ns`)} and ${w.checkpointId} in (${commas(g.ids.map((_, k) => sql`${p(`g${i}.id${k}`)}`))}))`,
    );
    const blobKeys = list.flatMap((g, i) =>
      g.blobs.size === 0
        ? []
        : [
            sql`(${b.threadId} = ${p(`g${i}.thread`)} and ${b.nsKey} = ${p(`g${i}.ns`)} and (${b.channel}, ${b.version}) in (${commas([...g.blobs.keys()].map((_, k) => sql`(${p(`g${i}.channel${k}`)}, ${p(`g${i}.version${k}`)})`))}))`,
          ],
    );
    const blobBranch =
      blobKeys.length === 0
        ? sql``
        : sql` union all
    select 'blob', ${b.threadId}, ${b.checkpointNs}, null, ${b.type}, ${b.blob}, ${b.channel}, ${b.version}, null, null, null
    from ${b.table} where ${sql.join(blobKeys, sql` or `)}`;
    return sql`
    select 'write' as ${sql.identifier("kind")}, ${as(w.threadId, "thread_id")}, ${as(w.checkpointNs, "checkpoint_ns")},
           ${as(w.checkpointId, "checkpoint_id")}, ${as(w.type, "type")}, ${as(w.blob, "data")},
           ${as(w.channel, "channel")}, null as ${sql.identifier("version")}, ${as(w.taskId, "task_id")},
           ${as(w.idx, "idx")}, ${as(w.taskPath, "task_path")}
    from ${w.table} where ${sql.join(writeKeys, sql` or `)}${blobBranch}`;
  };
  const related = await dialect.query(templates.statement(`related.${shape}`, build, values));
  return [...checkpoints, ...related];
}
