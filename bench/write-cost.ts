/**
 * Write cost per op, one subject at a time: Node CPU (process.cpuUsage) and wall time
 * per op of the growing-message workload (bench/workload.ts: a put and a putWrites per
 * step), after a warm-up whose ops are not counted. To compare two commits, run it in
 * each tree, alternating, several times (the medians are the result):
 *
 *   npm run build && BENCH_SUBJECTS=ours-sqlite npx tsx bench/write-cost.ts
 *
 * WRITE_THREADS (default 1000) threads of BENCH_STEPS checkpoints, after WARMUP_THREADS
 * (default 100); BENCH_INCREMENTAL as everywhere (bench/subjects.ts).
 */
import { readConfig } from "./config.js";
import { now } from "./stats.js";
import { SUBJECTS, type SubjectName, Workspace } from "./subjects.js";
import { writeThreads } from "./workload.js";

async function main(): Promise<void> {
  const config = readConfig();
  const names = (config.subjects.length > 0 ? config.subjects : ["ours-sqlite"]) as SubjectName[];
  const threads = Number(process.env.WRITE_THREADS ?? 1000);
  const warmup = Number(process.env.WARMUP_THREADS ?? 100);
  const workspace = new Workspace({ pgUrl: process.env.PG_URL, mysqlUrl: process.env.MYSQL_URL });
  try {
    for (const name of names) {
      const subject = await SUBJECTS[name](workspace);
      try {
        let ops = 0;
        const write = (first: number, count: number) =>
          writeThreads(
            subject.saver,
            Array.from({ length: count }, (_, i) => first + i),
            { ...config, writers: 1, ids: new Map(), onOp: () => ops++ },
          );
        await write(0, warmup);
        ops = 0;
        const cpuBefore = process.cpuUsage();
        const start = now();
        await write(warmup, threads);
        const cpu = process.cpuUsage(cpuBefore);
        const wallMs = now() - start;
        console.log(
          `${name}: CPU per op ${((cpu.user + cpu.system) / 1000 / ops).toFixed(3)} ms, wall per op ${(wallMs / ops).toFixed(3)} ms (${ops} ops)`,
        );
      } finally {
        await subject.close();
      }
    }
  } finally {
    await workspace.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
