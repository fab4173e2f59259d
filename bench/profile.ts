/**
 * One saver, one phase, for a profiler: the write workload, then getTuple / list
 * reads, timed per phase. Used to find what bounds a result in BENCHMARKS.md:
 *
 *   npm run build && BENCH_SUBJECTS=ours-sqlite BENCH_THREADS=200 npx tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile.ts
 *
 * Only the first subject of BENCH_SUBJECTS is used; its databases are dropped at the end.
 */
import { readConfig } from "./config.js";
import { formatMs, formatNumber, median, now } from "./stats.js";
import { SUBJECTS, type SubjectName, Workspace } from "./subjects.js";
import { rng, threadIdOf, writeThreads } from "./workload.js";

async function main(): Promise<void> {
  const config = readConfig();
  const name = (config.subjects[0] ?? "ours-sqlite") as SubjectName;
  if (!(name in SUBJECTS)) throw new Error(`unknown subject "${name}"`);
  const workspace = new Workspace({ pgUrl: process.env.PG_URL, mysqlUrl: process.env.MYSQL_URL });
  const subject = await SUBJECTS[name](workspace);
  try {
    const ids = new Map<number, string[]>();
    const threads = Array.from({ length: config.threads }, (_, i) => i);
    let ops = 0;
    const serverBefore = subject.serverCpuMs ? await subject.serverCpuMs() : Number.NaN;
    const cpuBefore = process.cpuUsage();
    const start = now();
    await writeThreads(subject.saver, threads, {
      steps: config.steps,
      writers: config.writers,
      threadsPerUser: config.threadsPerUser,
      ids,
      onOp: () => {
        ops++;
      },
    });
    const seconds = (now() - start) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const server = subject.serverCpuMs ? (await subject.serverCpuMs()) - serverBefore : Number.NaN;
    console.log(
      `${name}: write ${formatNumber(ops / seconds)} ops/s (${formatNumber(ops)} ops); CPU per op ${formatMs((cpu.user + cpu.system) / 1000 / ops)} in Node, ${formatMs(server / ops)} in the server`,
    );

    const random = rng(7);
    const timings: Record<string, number[]> = { latest: [], byId: [], list10: [] };
    for (let i = 0; i < config.samples; i++) {
      const thread = Math.floor(random() * config.threads);
      const thread_id = threadIdOf(thread);
      const checkpoint_id = ids.get(thread)?.[Math.floor(random() * config.steps)];
      let t = now();
      await subject.saver.getTuple({ configurable: { thread_id, checkpoint_ns: "" } });
      timings.latest.push(now() - t);
      t = now();
      await subject.saver.getTuple({ configurable: { thread_id, checkpoint_ns: "", checkpoint_id } });
      timings.byId.push(now() - t);
      t = now();
      for await (const _ of subject.saver.list({ configurable: { thread_id } }, { limit: 10 })) {
        // drain
      }
      timings.list10.push(now() - t);
    }
    console.log(
      `${name}: ${Object.entries(timings)
        .map(([op, values]) => `${op} ${formatMs(median(values))}`)
        .join(", ")}`,
    );
  } finally {
    await subject.close();
    await workspace.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
