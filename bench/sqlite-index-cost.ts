/**
 * What the metadata indexes cost a SQLite checkpoint insert: the checkpoints table as the
 * saver creates it (virtual generated columns from the metadata JSON, each indexed), the
 * same columns as plain values the writer fills, and no metadata indexes at all. Each
 * insert in a transaction of its own, as a put commits; interleaved rounds, medians.
 *
 *   npx tsx bench/sqlite-index-cost.ts        # BENCH_ROUNDS (default 30) x 200 inserts per shape
 *
 * A diagnostic on scratch files for BENCHMARKS.md ("what bounds the SQLite write path").
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { median, now } from "./stats.js";

const GENERATED = `
  meta_source text generated always as (case when json_type(metadata, '$.source') = 'text' then json_extract(metadata, '$.source') end) virtual,
  meta_step real generated always as (case when json_type(metadata, '$.step') in ('integer', 'real') then json_extract(metadata, '$.step') end) virtual,
  meta_run_id text generated always as (case when json_type(metadata, '$.run_id') = 'text' then json_extract(metadata, '$.run_id') end) virtual`;
const PLAIN = "meta_source text, meta_step real, meta_run_id text";
const META_INDEXES =
  "create index c_source on c (meta_source, checkpoint_id); create index c_step on c (meta_step, checkpoint_id); create index c_run on c (meta_run_id);";

const SHAPES = {
  "generated columns, indexed (today)": { columns: GENERATED, indexed: true, writesMeta: false },
  "plain columns, indexed": { columns: PLAIN, indexed: true, writesMeta: true },
  "plain columns, no metadata indexes": { columns: PLAIN, indexed: false, writesMeta: true },
};

function open(dir: string, name: string, shape: (typeof SHAPES)[keyof typeof SHAPES]) {
  const db = new Database(join(dir, `${name.replace(/\W+/g, "_")}.db`));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec(`create table c (thread_id text not null, checkpoint_ns text not null default '', checkpoint_id text not null,
    parent_checkpoint_id text, checkpoint_type text not null, checkpoint blob not null, channel_versions text not null,
    metadata text not null, ${shape.columns}, created_at integer not null,
    primary key (thread_id, checkpoint_ns, checkpoint_id));
    create index c_id on c (checkpoint_id); create index c_thread_id on c (thread_id, checkpoint_id);
    create index c_thread_time on c (thread_id, created_at); ${shape.indexed ? META_INDEXES : ""}`);
  const columns = `thread_id, checkpoint_id, checkpoint_type, checkpoint, channel_versions, metadata, created_at${shape.writesMeta ? ", meta_source, meta_step, meta_run_id" : ""}`;
  const insert = db.prepare(
    `insert into c (${columns}) values (${columns
      .split(",")
      .map(() => "?")
      .join(", ")})`,
  );
  const put = db.transaction((values: unknown[]) => insert.run(values));
  return { db, put, writesMeta: shape.writesMeta };
}

const dir = mkdtempSync(join(tmpdir(), "lgcd-index-cost-"));
try {
  const shapes = Object.entries(SHAPES).map(([name, shape]) => ({
    name,
    ...open(dir, name, shape),
    times: [] as number[],
  }));
  const checkpoint = Buffer.alloc(300, 7);
  for (let round = 0; round < Number(process.env.BENCH_ROUNDS ?? 30); round++) {
    for (const shape of shapes) {
      const start = now();
      for (let i = 0; i < 200; i++) {
        const metadata = { source: "loop", step: i, run_id: `run-${round}`, user: `u${i % 10}`, parents: {} };
        const values: unknown[] = [`t${i % 50}`, `1ef${String(round * 1000 + i).padStart(12, "0")}`, "msgpack"];
        values.push(checkpoint, '{"messages":"1"}', JSON.stringify(metadata), Date.now());
        if (shape.writesMeta) values.push(metadata.source, metadata.step, metadata.run_id);
        shape.put(values);
      }
      shape.times.push(((now() - start) / 200) * 1000);
    }
  }
  for (const shape of shapes) {
    console.log(`${shape.name}: ${median(shape.times).toFixed(1)} us per insert`);
    shape.db.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
