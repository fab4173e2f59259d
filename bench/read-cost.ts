/**
 * getTuple cost per call, side by side: Node CPU (process.cpuUsage) and wall latency
 * of `getTuple` of the latest checkpoint and of one by id, for each subject, in
 * interleaved rounds (subject A, B, A, B, ...) so a busy machine slows all alike.
 * Also prints the statements one call sends (our savers, from drizzle's logger).
 *
 *   npm run build && BENCH_SUBJECTS=ours-sqlite,official-sqlite BENCH_THREADS=200 npx tsx bench/read-cost.ts
 *
 * READ_ROUNDS (default 6) rounds of READ_CALLS (default 300) calls of each kind.
 * The growing-message workload (bench/workload.ts) is written first, so the latest
 * checkpoint of a thread holds its whole message list, reassembled from its deltas.
 */
import { readConfig } from "./config.js";
import { median, now } from "./stats.js";
import { SUBJECTS, type Subject, type SubjectName, Workspace } from "./subjects.js";
import { rng, threadIdOf, writeThreads } from "./workload.js";

/** Milliseconds to the microsecond: reads take a fraction of a millisecond. */
const formatMs = (ms: number): string => `${ms.toFixed(3)} ms`;

interface Sample {
  cpuMs: number;
  wallMs: number[];
}

async function measure(subject: Subject, calls: number, config: (i: number) => object): Promise<Sample> {
  const wallMs: number[] = [];
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const start = now();
    await subject.saver.getTuple({ configurable: config(i) });
    wallMs.push(now() - start);
  }
  const cpu = process.cpuUsage(cpuBefore);
  return { cpuMs: (cpu.user + cpu.system) / 1000 / calls, wallMs };
}

async function main(): Promise<void> {
  const config = readConfig();
  const names = (config.subjects.length > 0 ? config.subjects : ["ours-sqlite", "official-sqlite"]) as SubjectName[];
  const rounds = Number(process.env.READ_ROUNDS ?? 6);
  const calls = Number(process.env.READ_CALLS ?? 300);
  const workspace = new Workspace({ pgUrl: process.env.PG_URL, mysqlUrl: process.env.MYSQL_URL });
  const subjects: Subject[] = [];
  const idsOf = new Map<Subject, Map<number, string[]>>();
  try {
    for (const name of names) {
      const subject = await SUBJECTS[name](workspace);
      subjects.push(subject);
      const threads = Array.from({ length: config.threads }, (_, i) => i);
      const ids = new Map<number, string[]>();
      idsOf.set(subject, ids);
      await writeThreads(subject.saver, threads, { ...config, ids, onOp: () => {} });
    }
    const pick = (round: number) => {
      const random = rng(round + 1);
      return Array.from({ length: calls }, () => Math.floor(random() * config.threads));
    };
    // By id: a checkpoint in the middle of the thread's run, so its value has a delta chain.
    const kindsOf = (subject: Subject) => ({
      latest: (thread: number) => ({ thread_id: threadIdOf(thread), checkpoint_ns: "" }),
      byId: (thread: number) => ({
        thread_id: threadIdOf(thread),
        checkpoint_ns: "",
        checkpoint_id: idsOf.get(subject)?.get(thread)?.[(thread % (config.steps - 1)) + 1],
      }),
    });
    for (const subject of subjects) {
      for (const [kind, of] of Object.entries(kindsOf(subject))) {
        const queries = await subject.recordQueries?.(() => subject.saver.getTuple({ configurable: of(0) }));
        if (queries) console.log(`${subject.name} ${kind}: ${queries.length} statement(s) per call`);
      }
      await measure(subject, calls, (i) => kindsOf(subject).latest(i % config.threads)); // warm-up
    }
    const results = new Map<string, { cpu: number[]; wall: number[] }>();
    for (let round = 0; round < rounds; round++) {
      const threads = pick(round);
      for (const subject of subjects) {
        for (const [kind, of] of Object.entries(kindsOf(subject))) {
          const sample = await measure(subject, calls, (i) => of(threads[i]));
          const key = `${subject.name} ${kind}`;
          const entry = results.get(key) ?? { cpu: [], wall: [] };
          entry.cpu.push(sample.cpuMs);
          entry.wall.push(median(sample.wallMs));
          results.set(key, entry);
        }
      }
    }
    for (const [key, { cpu, wall }] of results) {
      console.log(
        `${key}: CPU per call ${formatMs(median(cpu))} (rounds ${cpu.map(formatMs).join(" ")}), latency median ${formatMs(median(wall))}`,
      );
    }
  } finally {
    for (const subject of subjects) await subject.close();
    await workspace.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
