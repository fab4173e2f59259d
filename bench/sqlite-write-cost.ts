/**
 * Where a SQLite write op (put + putWrites of the growing-message workload) spends its
 * time, for our saver and the official one: the statements better-sqlite3 runs per op
 * with their time (wall, in the driver call, so COMMIT includes writing the WAL), and
 * the WAL frames (4 KiB pages) written per op with automatic checkpoints off.
 *
 *   npm run build && npx tsx bench/sqlite-write-cost.ts            # BENCH_THREADS (default 300) x 10 steps
 *
 * It wraps better-sqlite3's Statement methods and Database.pragma in this process:
 * a diagnostic, not a benchmark to compare ops/s with (bench/run.ts is).
 */
import { statSync } from "node:fs";
import Database from "better-sqlite3";
import { SUBJECTS, Workspace } from "./subjects.js";
import { writeThreads } from "./workload.js";

interface StatementMethods {
  source: string;
  [method: string]: unknown;
}

const spent = new Map<string, { ms: number; calls: number }>();
let recording = false;

/** Times every statement call while `recording`, by its method and the start of its text. */
function timeStatements(): void {
  const probe = new Database(":memory:");
  const proto = Object.getPrototypeOf(probe.prepare("select 1")) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  for (const method of ["all", "get", "run"]) {
    const original = proto[method];
    proto[method] = function (this: StatementMethods, ...args: unknown[]) {
      if (!recording) return original.apply(this, args);
      const start = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        const key = `${method} ${this.source.replace(/\s+/g, " ").trim().slice(0, 50)}`;
        const entry = spent.get(key) ?? { ms: 0, calls: 0 };
        entry.ms += performance.now() - start;
        entry.calls++;
        spent.set(key, entry);
      }
    };
  }
}

/** Both savers' connections get `synchronous`; with it, automatic WAL checkpoints go off so the WAL keeps every frame. */
function keepWalFrames(): void {
  const proto = Database.prototype as unknown as { pragma(source: string): unknown };
  const original = proto.pragma;
  proto.pragma = function (this: Database.Database, source: string) {
    const result = original.call(this, source);
    if (/synchronous/i.test(source)) original.call(this, "wal_autocheckpoint = 0");
    return result;
  };
}

async function main(): Promise<void> {
  timeStatements();
  keepWalFrames();
  const threads = Number(process.env.BENCH_THREADS ?? 300);
  for (const [name, file] of [
    ["ours-sqlite", "ours"],
    ["official-sqlite", "official"],
  ] as const) {
    const workspace = new Workspace({});
    const subject = await SUBJECTS[name](workspace);
    try {
      const warm = Array.from({ length: 20 }, (_, i) => 100_000 + i);
      await writeThreads(subject.saver, warm, {
        steps: 10,
        writers: 8,
        threadsPerUser: 20,
        ids: new Map(),
        onOp: () => {},
      });
      const wal = `${workspace.sqliteFile(file)}-wal`;
      const walBefore = statSync(wal).size;
      spent.clear();
      recording = true;
      let ops = 0;
      const cpu = process.cpuUsage();
      const list = Array.from({ length: threads }, (_, i) => i);
      await writeThreads(subject.saver, list, {
        steps: 10,
        writers: 8,
        threadsPerUser: 20,
        ids: new Map(),
        onOp: () => {
          ops++;
        },
      });
      const used = process.cpuUsage(cpu);
      recording = false;
      const frames = (statSync(wal).size - walBefore) / (4096 + 24);
      let total = 0;
      console.log(`\n${name}: ${ops} ops, Node CPU ${((used.user + used.system) / 1000 / ops).toFixed(3)} ms per op`);
      for (const [key, { ms, calls }] of spent) {
        total += ms;
        console.log(`  ${((ms / ops) * 1000).toFixed(1)} us/op, ${(calls / ops).toFixed(2)}x per op: ${key}`);
      }
      console.log(
        `  statements: ${((total / ops) * 1000).toFixed(1)} us per op; WAL frames per op: ${(frames / ops).toFixed(1)}`,
      );
    } finally {
      await subject.close();
      await workspace.drop();
    }
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
