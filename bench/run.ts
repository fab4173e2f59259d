/**
 * Benchmarks DrizzleSaver on PostgreSQL, MariaDB/MySQL and SQLite side by side with
 * the official PostgresSaver and SqliteSaver (and MemorySaver as a reference), in one
 * run on the same servers. `npm run bench` (see BENCHMARKS.md); sizes come from
 * BENCH_* variables (bench/config.ts), BENCH_QUICK=1 for a run of about a minute.
 *
 * Phases: single-insert ceilings; the write path (threads x steps checkpoints per
 * saver, through the saver API); bytes on disk; the tables grown by SQL copies of
 * those threads to BENCH_BASE checkpoints; getTuple / list latencies and the
 * cross-thread metadata filter; grown again to BENCH_LARGE; the same reads again.
 * Progress goes to stderr, the tables to stdout.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { type Ceiling, mysqlCeiling, pgbenchCeiling, postgresCeilings } from "./ceiling.js";
import { type BenchConfig, isDefaultRun, readConfig, SIZE_VARIABLES } from "./config.js";
import {
  LATENCY_OPS,
  type LatencyOp,
  type ReadResult,
  type RunResults,
  renderResults,
  type Size,
  type SubjectResult,
  writeReport,
} from "./report.js";
import { every, formatMs, formatNumber, median, now, progress, progressDone } from "./stats.js";
import { SUBJECT_NAMES, SUBJECTS, type Subject, type SubjectName, Workspace } from "./subjects.js";
import { type BenchMetadata, rng, shuffledOrders, threadIdOf, userIndexOf, writeThreads } from "./workload.js";

const REPORT_PATH = fileURLToPath(new URL("../BENCHMARKS.md", import.meta.url));
const FILTER_STEP = 3;
/** Time per saver and size after which the filter stops sampling (at least 3 samples are always taken). */
const FILTER_BUDGET_MS = 6_000;
/**
 * Unmeasured calls of each read before sampling: enough for every connection of a
 * pool of 10 to have run each statement more than five times, after which
 * PostgreSQL plans a prepared statement once instead of on every call. A service
 * reaches that state in its first seconds; a benchmark must not measure before it.
 */
const WARMUP_CALLS = 60;

/** Time per saver and size after which getTuple / list stop sampling (at least 20 samples are always taken). */
const LATENCY_BUDGET_MS = 15_000;
const MIN_LATENCY_SAMPLES = 20;

interface Run {
  config: BenchConfig;
  subjects: Subject[];
  results: Map<string, SubjectResult>;
  ids: Map<string, Map<number, string[]>>;
  /** Copies made so far, per subject. */
  copies: Map<string, number>;
}

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function command(): string {
  const script = process.env.npm_lifecycle_event;
  const vars = SIZE_VARIABLES.filter(
    (name) => (process.env[name] ?? "") !== "" && !(script === "bench:compare" && name === "BENCH_COMPARE"),
  ).map((name) => `${name}=${process.env[name]}`);
  const invocation = script?.startsWith("bench") ? `npm run ${script}` : "npm run build && npx tsx bench/run.ts";
  return [...vars, invocation].join(" ");
}

// ---------------------------------------------------------------- environment

async function environment(servers: { pgUrl?: string; mysqlUrl?: string }): Promise<string[]> {
  const lines = [
    `code: ${gitState()}`,
    `machine: ${cpus().length} x ${cpus()[0]?.model ?? "cpu"}, ${formatNumber(totalmem() / 1024 ** 3, 0)} GiB RAM, load average at start ${loadavg()
      .map((v) => v.toFixed(2))
      .join(" / ")} (shared with other jobs: expect noise)`,
    `Node ${process.version}; SQLite ${new Database(":memory:").prepare<[], { v: string }>("select sqlite_version() as v").get()?.v} (better-sqlite3), WAL, synchronous=NORMAL for both SQLite savers`,
  ];
  if (servers.pgUrl) {
    const sql = postgres(servers.pgUrl, { max: 1, onnotice: () => {} });
    try {
      const settings = await sql<{ name: string; setting: string; unit: string | null }[]>`
        select name, setting, unit from pg_settings
        where name in ('server_version', 'fsync', 'synchronous_commit', 'shared_buffers', 'max_wal_size')`;
      const show = (name: string) => {
        const row = settings.find((s) => s.name === name);
        if (!row) return "?";
        if (name === "shared_buffers") return formatBytesSetting(Number(row.setting) * 8192);
        return `${row.setting}${row.unit ?? ""}`;
      };
      lines.push(
        `PostgreSQL ${show("server_version")}: fsync=${show("fsync")}, synchronous_commit=${show("synchronous_commit")}, shared_buffers=${show("shared_buffers")}, max_wal_size=${show("max_wal_size")}`,
      );
    } finally {
      await sql.end();
    }
  }
  if (servers.mysqlUrl) {
    const connection = await mysql.createConnection(servers.mysqlUrl);
    try {
      const [[row]] = await connection.query<mysql.RowDataPacket[]>(
        `select version() as version, @@innodb_flush_log_at_trx_commit as flush, @@innodb_buffer_pool_size as pool, @@sync_binlog as sync_binlog, @@log_bin as log_bin`,
      );
      lines.push(
        `MySQL server ${row.version}: innodb_flush_log_at_trx_commit=${row.flush}, innodb_buffer_pool_size=${formatBytesSetting(Number(row.pool))}, log_bin=${row.log_bin}`,
      );
    } finally {
      await connection.end();
    }
  }
  return lines;
}

/** A short hash of the files under src/ and migrations/, to tell uncommitted states apart. */
function sourceHash(): string {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const hash = createHash("sha256");
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else hash.update(path).update(readFileSync(join(root, path)));
    }
  };
  for (const dir of ["src", "migrations"]) if (existsSync(join(root, dir))) walk(dir);
  return hash.digest("hex").slice(0, 12);
}

/** The commit measured, and whether the saver's sources differed from it (read-only git commands). */
function gitState(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync("git", args, { stdio: ["ignore", "pipe", "ignore"] })
        .toString()
        .trim();
    const commit = git("rev-parse", "--short", "HEAD");
    const changed = git("status", "--porcelain", "--", "src", "migrations");
    return `commit ${commit}${changed ? ` with uncommitted changes in src/ or migrations/ (content hash ${sourceHash()})` : ""}`;
  } catch {
    return "not a git checkout";
  }
}

function formatBytesSetting(bytes: number): string {
  return bytes >= 1024 ** 3 ? `${bytes / 1024 ** 3}GB` : `${Math.round(bytes / 1024 ** 2)}MB`;
}

// ---------------------------------------------------------------- phases

async function ceilings(run: Run, workspace: Workspace): Promise<Ceiling[]> {
  const { config } = run;
  const result: Ceiling[] = [];
  if (config.ceilingSeconds === 0) return result;
  const families = new Set(run.subjects.map((s) => s.family));
  if (families.has("postgres")) {
    const url = await workspace.pgDatabase("ceiling");
    log(`[ceiling] postgres: ${config.writers} writers, ${config.ceilingSeconds} s`);
    result.push(...(await postgresCeilings(url, config.writers, config.ceilingSeconds)));
    const pgbench = await pgbenchCeiling(url, config.writers, config.ceilingSeconds);
    if (pgbench) result.push(pgbench);
  }
  if (families.has("mysql")) {
    const url = await workspace.mysqlDatabase("ceiling");
    log(`[ceiling] mysql: ${config.writers} writers, ${config.ceilingSeconds} s`);
    result.push(await mysqlCeiling(url, config.writers, config.ceilingSeconds));
  }
  for (const ceiling of result) log(`[ceiling] ${ceiling.name}: ${formatNumber(ceiling.insertsPerSecond)} inserts/s`);
  return result;
}

/**
 * Threads each saver writes before the measured rounds, in a round of their own that is
 * not measured: a process's first writes run unoptimized code on tables not yet analyzed,
 * and every saver's first round ran slower than its others (12-40%), the first of the
 * round most. Part of the data all the same: every saver still holds threads x steps
 * checkpoints.
 */
const WRITE_WARMUP_THREADS = 20;

async function writePath(run: Run): Promise<void> {
  const { config, subjects } = run;
  const warmup = Math.min(WRITE_WARMUP_THREADS, Math.floor(config.threads / (config.rounds + 1)));
  const perRound = Math.ceil((config.threads - warmup) / config.rounds);
  const all = Array.from({ length: config.threads }, (_, i) => i);
  const order = shuffledOrders(subjects, 1);
  for (let round = warmup > 0 ? -1 : 0; round < config.rounds; round++) {
    const from = round < 0 ? 0 : warmup + round * perRound;
    const threads = all.slice(from, round < 0 ? warmup : from + perRound);
    for (const subject of order()) {
      const result = run.results.get(subject.name) as SubjectResult;
      const ids = run.ids.get(subject.name) as Map<number, string[]>;
      const total = threads.length * config.steps;
      let ops = 0;
      const serverBefore = subject.serverCpuMs ? await subject.serverCpuMs() : Number.NaN;
      const cpuBefore = process.cpuUsage();
      const start = now();
      const line = () =>
        `[write] ${subject.name} ${round < 0 ? "warm-up" : `round ${round + 1}/${config.rounds}`}: ${formatNumber(ops)}/${formatNumber(total)} ops, ${formatNumber(ops / ((now() - start) / 1000))} ops/s`;
      const stop = every(2000, () => progress(line()));
      try {
        await writeThreads(subject.saver, threads, {
          steps: config.steps,
          writers: config.writers,
          threadsPerUser: config.threadsPerUser,
          ids,
          onOp: () => {
            ops++;
          },
        });
      } finally {
        stop();
      }
      progressDone(line());
      if (round < 0) continue;
      result.write.ops += ops;
      result.write.ms += now() - start;
      const cpu = process.cpuUsage(cpuBefore);
      result.write.clientCpuMs += (cpu.user + cpu.system) / 1000;
      result.write.serverCpuMs += subject.serverCpuMs ? (await subject.serverCpuMs()) - serverBefore : Number.NaN;
    }
  }
  for (const subject of subjects) {
    const result = run.results.get(subject.name) as SubjectResult;
    const { ops, ms, clientCpuMs, serverCpuMs } = result.write;
    log(
      `[write] ${subject.name}: ${formatNumber(ops / (ms / 1000))} ops/s overall; CPU per op: ${formatMs(clientCpuMs / ops)} in Node${Number.isFinite(serverCpuMs) ? `, ${formatMs(serverCpuMs / ops)} in the server` : ""}`,
    );
  }
}

/** Reads one thread back and checks it holds what was written (a broken saver must not look fast). */
async function verify(run: Run): Promise<void> {
  const { config } = run;
  for (const subject of run.subjects) {
    const result = run.results.get(subject.name) as SubjectResult;
    const thread = config.threads - 1;
    const tuple = await subject.saver.getTuple({ configurable: { thread_id: threadIdOf(thread), checkpoint_ns: "" } });
    const values = tuple?.checkpoint.channel_values as Record<string, unknown> | undefined;
    const messages = values?.messages;
    if (!tuple) result.problems.push("getTuple found no checkpoint for a written thread");
    else if (!Array.isArray(messages) || messages.length !== config.steps)
      result.problems.push(
        `latest checkpoint has ${Array.isArray(messages) ? messages.length : "no"} messages, expected ${config.steps}`,
      );
    else if (values?.counter !== config.steps - 1 || typeof values?.context !== "string")
      result.problems.push("latest checkpoint lacks the counter or the unchanged context channel");
    else if (tuple.pendingWrites?.length !== 2)
      result.problems.push(`latest checkpoint has ${tuple.pendingWrites?.length ?? 0} pending writes, expected 2`);
    const ids = run.ids.get(subject.name)?.get(thread) ?? [];
    if (tuple && tuple.checkpoint.id !== ids[ids.length - 1])
      result.problems.push("latest checkpoint id differs from the last put");
    for (const problem of result.problems) log(`[verify] ${subject.name}: ${problem}`);
  }
}

function readResult(run: Run, subject: Subject, size: Size): ReadResult {
  const result = run.results.get(subject.name) as SubjectResult;
  result.reads[size] ??= {
    checkpoints: 0,
    latency: { getTupleLatest: [], getTupleById: [], list10: [] },
    filter: [],
  };
  return result.reads[size] as ReadResult;
}

/**
 * getTuple (latest, by id) and list(limit 10) on random threads written through the
 * saver, the same threads in the same order for every saver, interleaved.
 */
async function latencies(run: Run, subjects: Subject[], size: Size): Promise<void> {
  const { config } = run;
  const random = rng(20240611);
  const warmup = WARMUP_CALLS;
  const picks = Array.from({ length: warmup + config.samples }, () => ({
    thread: Math.floor(random() * config.threads),
    position: Math.floor(random() * config.steps),
  }));
  const spent = new Map<string, number>(subjects.map((s) => [s.name, 0]));
  const order = shuffledOrders(subjects, 2);
  const wants = (subject: Subject, i: number) =>
    i < warmup + MIN_LATENCY_SAMPLES || (spent.get(subject.name) ?? 0) < LATENCY_BUDGET_MS;
  let done = 0;
  const stop = every(2000, () => progress(`[latency ${size}] sample ${done}/${picks.length}`));
  try {
    for (const [i, pick] of picks.entries()) {
      for (const subject of order()) {
        if (!wants(subject, i)) continue;
        const reads = readResult(run, subject, size);
        const thread_id = threadIdOf(pick.thread);
        const checkpointId = run.ids.get(subject.name)?.get(pick.thread)?.[pick.position];
        const ops: Record<LatencyOp, () => Promise<unknown>> = {
          getTupleLatest: () => subject.saver.getTuple({ configurable: { thread_id, checkpoint_ns: "" } }),
          getTupleById: () =>
            subject.saver.getTuple({ configurable: { thread_id, checkpoint_ns: "", checkpoint_id: checkpointId } }),
          list10: async () => {
            const tuples = [];
            for await (const tuple of subject.saver.list({ configurable: { thread_id } }, { limit: 10 }))
              tuples.push(tuple);
            return tuples;
          },
        };
        for (const op of Object.keys(LATENCY_OPS) as LatencyOp[]) {
          const start = now();
          const value = await ops[op]();
          const elapsed = now() - start;
          if (value === undefined || (Array.isArray(value) && value.length !== Math.min(10, config.steps))) {
            throw new Error(`${subject.name} ${op} returned ${Array.isArray(value) ? value.length : "nothing"}`);
          }
          spent.set(subject.name, (spent.get(subject.name) ?? 0) + elapsed);
          if (i >= warmup) reads.latency[op].push(elapsed);
        }
      }
      done = i + 1;
      if (!subjects.some((subject) => wants(subject, i + 1))) break;
    }
  } finally {
    stop();
  }
  progressDone(`[latency ${size}] done`);
  for (const subject of subjects) {
    const reads = readResult(run, subject, size);
    if (subject.explainQuery) {
      const thread_id = threadIdOf(picks[0]?.thread ?? 0);
      try {
        reads.getTuplePlan = await subject.explainQuery(() =>
          subject.saver.getTuple({ configurable: { thread_id, checkpoint_ns: "" } }),
        );
      } catch (error) {
        reads.getTuplePlan = `(could not explain: ${(error as Error).message})`;
      }
    }
    log(
      `[latency ${size}] ${subject.name}: ${(Object.keys(LATENCY_OPS) as LatencyOp[])
        .map((op) => `${op} ${formatMs(median(reads.latency[op]))}`)
        .join(", ")} (n=${reads.latency.getTupleLatest.length})`,
    );
  }
}

async function filterOnce(subject: Subject, filter: { user: string; step: number }): Promise<number> {
  const start = now();
  const tuples = [];
  for await (const tuple of subject.saver.list({}, { filter, limit: 5 })) tuples.push(tuple);
  const elapsed = now() - start;
  if (tuples.length !== 5)
    throw new Error(`${subject.name}: the filter found ${tuples.length} checkpoints, expected 5`);
  for (const tuple of tuples) {
    const metadata = tuple.metadata as BenchMetadata | undefined;
    if (metadata?.user !== filter.user || metadata?.step !== filter.step) {
      throw new Error(`${subject.name}: the filter returned ${JSON.stringify(metadata)}`);
    }
  }
  return elapsed;
}

async function measureFilter(
  run: Run,
  subjects: Subject[],
  which: Size,
  filter: { user: string; step: number },
): Promise<void> {
  // Warm-up (as for latencies, but at most 3 s per saver: the slow ones need no plan cache) and check.
  for (const subject of subjects) {
    const start = now();
    for (let i = 0; i < WARMUP_CALLS && (i === 0 || now() - start < 3000); i++) await filterOnce(subject, filter);
  }
  const samples = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
  const spent = new Map<string, number>(subjects.map((s) => [s.name, 0]));
  const wants = (subject: Subject) => {
    const n = samples.get(subject.name)?.length ?? 0;
    return n < 3 || (n < run.config.filterSamples && (spent.get(subject.name) ?? 0) < FILTER_BUDGET_MS);
  };
  const order = shuffledOrders(subjects, 3);
  let round = 0;
  const stop = every(2000, () => progress(`[filter ${which}] round ${round + 1}`));
  try {
    for (; subjects.some(wants); round++) {
      for (const subject of order()) {
        if (!wants(subject)) continue;
        const elapsed = await filterOnce(subject, filter);
        samples.get(subject.name)?.push(elapsed);
        spent.set(subject.name, (spent.get(subject.name) ?? 0) + elapsed);
      }
    }
  } finally {
    stop();
  }
  progressDone(`[filter ${which}] ${round} rounds`);
  for (const subject of subjects) {
    const reads = readResult(run, subject, which);
    reads.filter = samples.get(subject.name) ?? [];
    if (subject.explainFilter) {
      try {
        reads.filterPlan = await subject.explainFilter(filter, () => filterOnce(subject, filter));
      } catch (error) {
        reads.filterPlan = `(could not explain: ${(error as Error).message})`;
      }
    }
    log(
      `[filter ${which}] ${subject.name} at ${formatNumber(reads.checkpoints)} checkpoints: ${formatMs(median(reads.filter))} (n=${reads.filter.length})`,
    );
  }
}

async function sizes(run: Run): Promise<void> {
  for (const subject of run.subjects) {
    if (!subject.size || !subject.count) continue;
    progress(`[size] ${subject.name}`);
    const size = await subject.size();
    const checkpoints = await subject.count();
    (run.results.get(subject.name) as SubjectResult).size = { ...size, checkpoints };
    progressDone(
      `[size] ${subject.name}: ${formatNumber(size.total / checkpoints)} bytes per checkpoint (${formatNumber(checkpoints)} checkpoints)`,
    );
  }
}

/** Copies per statement: large enough to keep statements few, small enough to show progress. */
const COPIES_PER_BATCH = 5;

/**
 * Grows every saver to `target` checkpoints with SQL copies of the threads written
 * through it (see Subject.bulkCopy), continuing the copy numbers of earlier growth.
 */
async function grow(run: Run, subjects: Subject[], size: Size, target: number): Promise<void> {
  const { config } = run;
  const written = config.threads * config.steps;
  const copies = Math.max(0, Math.ceil(target / written) - 1);
  const users = userIndexOf(config.threads - 1, config.threadsPerUser) + 1;
  for (const subject of subjects) {
    const reads = readResult(run, subject, size);
    const start = now();
    let copied = 0;
    const done = run.copies.get(subject.name) ?? 0;
    for (let from = done + 1; from <= copies; from += COPIES_PER_BATCH) {
      const to = Math.min(copies, from + COPIES_PER_BATCH - 1);
      progress(`[grow ${size}] ${subject.name}: copies ${from}-${to} of ${copies}`);
      copied += (await subject.bulkCopy?.(from, to, users)) ?? 0;
    }
    run.copies.set(subject.name, Math.max(done, copies));
    if (subject.analyze) await subject.analyze();
    reads.checkpoints = subject.count ? await subject.count() : written;
    progressDone(
      `[grow ${size}] ${subject.name}: ${formatNumber(reads.checkpoints)} checkpoints (${formatNumber(copied)} copied in ${formatNumber((now() - start) / 1000, 1)} s)`,
    );
  }
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const config = readConfig();
  const started = new Date();
  const t0 = now();
  const servers = { pgUrl: process.env.PG_URL, mysqlUrl: process.env.MYSQL_URL };
  const wanted = (config.subjects.length > 0 ? config.subjects : SUBJECT_NAMES) as SubjectName[];
  for (const name of wanted)
    if (!(name in SUBJECTS)) throw new Error(`unknown subject "${name}" (${SUBJECT_NAMES.join(", ")})`);
  const notes: string[] = [];
  const available = wanted.filter((name) => {
    const missing = name.endsWith("-pg") ? !servers.pgUrl : name.endsWith("-mysql") ? !servers.mysqlUrl : false;
    if (missing) notes.push(`${name} skipped: ${name.endsWith("-pg") ? "PG_URL" : "MYSQL_URL"} is not set`);
    return !missing;
  });
  for (const note of notes) log(`[setup] ${note}`);

  const workspace = new Workspace(servers);
  const subjects: Subject[] = [];
  let cleaning: Promise<void> | undefined;
  const cleanup = () => {
    cleaning ??= (async () => {
      for (const subject of subjects.splice(0)) await subject.close().catch(() => {});
      if (config.keep) log(`[cleanup] kept ${workspace.describe()}`);
      else await workspace.drop().catch((error: Error) => log(`[cleanup] ${error.message}`));
    })();
    return cleaning;
  };
  const interrupted = () => {
    log("\n[cleanup] interrupted: dropping the benchmark databases");
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);

  try {
    log(
      `[setup] ${formatNumber(config.threads)} threads x ${config.steps} steps, ${config.writers} writers, reads at ${formatNumber(config.base)} and ${formatNumber(config.large)} checkpoints; databases ${workspace.tag}_*`,
    );
    const environmentLines = await environment(servers);
    for (const name of available) subjects.push(await SUBJECTS[name](workspace));
    const run: Run = {
      config,
      subjects,
      results: new Map(
        subjects.map((s) => [
          s.name,
          {
            name: s.name,
            label: s.label,
            family: s.family,
            official: s.official,
            write: { ops: 0, ms: 0, clientCpuMs: 0, serverCpuMs: 0 },
            reads: {},
            problems: [],
          },
        ]),
      ),
      ids: new Map(subjects.map((s) => [s.name, new Map()])),
      copies: new Map(),
    };
    const users = userIndexOf(config.threads - 1, config.threadsPerUser) + 1;
    const filter = { user: `u${Math.min(7, users - 1)}`, step: FILTER_STEP };
    if (config.steps <= FILTER_STEP + 1) throw new Error(`BENCH_STEPS must be above ${FILTER_STEP + 1}`);

    const ceilingResults = await ceilings(run, workspace);
    await writePath(run);
    await verify(run);
    await sizes(run);
    const grown = subjects.filter((s) => s.bulkCopy);
    const missing = subjects.filter((s) => !s.bulkCopy).map((s) => s.name);
    if (missing.length > 0) notes.push(`not grown beyond the written threads: ${missing.join(", ")}`);
    // MemorySaver keeps its checkpoints in this process's heap, whose garbage collection
    // slows every saver measured here: it is grown and measured after the others, at
    // the first size only, then released.
    const inProcess = grown.filter((s) => s.family === "memory");
    const databases = grown.filter((s) => s.family !== "memory");
    for (const size of ["base", "large"] as const) {
      const target = size === "base" ? config.base : config.large;
      if (size === "large" && target <= config.base) break;
      for (const measured of size === "base" ? [databases, inProcess] : [databases]) {
        if (measured.length === 0) continue;
        await grow(run, measured, size, target);
        await latencies(run, measured, size);
        await measureFilter(run, measured, size, filter);
      }
      for (const s of inProcess) await s.release?.();
    }
    if (inProcess.length > 0) {
      notes.push(
        "MemorySaver is grown and measured after the others, at the first size only (its data lives in the benchmark's own heap).",
      );
    }
    const written = config.threads * config.steps;
    if (config.base > written || config.large > config.base) {
      notes.push(
        `Reads run on tables grown by SQL from the ${formatNumber(written)} checkpoints each saver wrote: every written thread copied with INSERT ... SELECT into each of the saver's tables (checkpoints, blobs, writes) as a new thread, its checkpoint ids made unique and a new user per copy, so "${filter.user}" still owns the same ${config.threadsPerUser} threads; every other column byte for byte as the saver wrote it. MemorySaver gets the same copies in its maps. getTuple and list read threads written through the saver.`,
      );
    }
    const results: RunResults = {
      config,
      command: command(),
      startedAt: started,
      durationMs: now() - t0,
      environment: environmentLines,
      filter,
      ceilings: ceilingResults,
      subjects: subjects.map((s) => run.results.get(s.name) as SubjectResult),
      notes,
    };
    const report = renderResults(results);
    process.stdout.write(`\n${report}\n`);
    const write = config.writeReport === "yes" || (config.writeReport === "auto" && isDefaultRun());
    if (write) {
      writeReport(REPORT_PATH, report);
      log(`[report] results written to BENCHMARKS.md`);
    } else {
      log(`[report] BENCHMARKS.md left as it is (non-default sizes; BENCH_WRITE=1 writes it anyway)`);
    }
  } finally {
    await cleanup();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
