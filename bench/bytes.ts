/**
 * Bytes per checkpoint of the growing-message workload (workload.ts) at 25 and 200
 * steps per thread, for our savers and the official ones, side by side:
 *
 *   npm run bench:bytes                                  # 200 threads per size
 *   BYTES_THREADS=10 BYTES_SUBJECTS=ours-sqlite,official-sqlite npm run bench:bytes  # small
 *
 * Each (subject, steps) pair writes BYTES_THREADS threads into a database of its own and
 * reports the saver's tables' bytes on disk (indexes and TOAST included) per checkpoint.
 */
import { SUBJECTS, type SubjectName, Workspace } from "./subjects.js";
import { writeThreads } from "./workload.js";

const STEPS = [25, 200];
const DEFAULT_SUBJECTS: SubjectName[] = ["ours-pg", "official-pg", "ours-sqlite", "official-sqlite"];

/** One (subject, steps) pair in databases of its own, removed afterwards. */
async function measure(name: SubjectName, steps: number, threads: number) {
  const workspace = new Workspace({ pgUrl: process.env.PG_URL, mysqlUrl: process.env.MYSQL_URL });
  const subject = await SUBJECTS[name](workspace);
  try {
    const ids = new Map<number, string[]>();
    const list = Array.from({ length: threads }, (_, i) => i);
    await writeThreads(subject.saver, list, { steps, writers: 4, threadsPerUser: 10, ids, onOp: () => {} });
    await subject.analyze?.();
    const size = await subject.size?.();
    const checkpoints = threads * steps;
    return { bytes: size ? size.total / checkpoints : Number.NaN, method: size?.method ?? "" };
  } finally {
    await subject.close();
    await workspace.drop();
  }
}

async function main(): Promise<void> {
  const threads = Number(process.env.BYTES_THREADS ?? 200);
  const names = (process.env.BYTES_SUBJECTS?.split(",") ?? DEFAULT_SUBJECTS) as SubjectName[];
  const results: Record<string, Record<number, number>> = {};
  for (const name of names) {
    if (!(name in SUBJECTS)) throw new Error(`unknown subject ${name}`);
    results[name] = {};
    for (const steps of STEPS) {
      const { bytes, method } = await measure(name, steps, threads);
      results[name][steps] = bytes;
      console.log(`${name} ${steps} steps: ${bytes.toFixed(0)} bytes per checkpoint (${method})`);
    }
  }
  console.log(`\n| subject | 25 steps | 200 steps | 200/25 | 25 steps vs official |`);
  console.log(`| --- | --- | --- | --- | --- |`);
  for (const [name, bySteps] of Object.entries(results)) {
    const official = results[name.replace(/^ours-/, "official-")]?.[25];
    const ratio = official && name.startsWith("ours-") ? `${(bySteps[25] / official).toFixed(2)}x` : "";
    const growth = (bySteps[200] / bySteps[25]).toFixed(2);
    console.log(`| ${name} | ${bySteps[25].toFixed(0)} | ${bySteps[200].toFixed(0)} | ${growth}x | ${ratio} |`);
  }
  console.log(`\n${threads} threads per (subject, steps).`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
