/**
 * Benchmark sizes, all overridable by environment variables. `BENCH_QUICK=1` picks
 * small defaults (a run of about a minute), `BENCH_COMPARE=1` those of
 * `npm run bench:compare` (under 3 minutes: the side-by-side table BENCHMARKS.md opens
 * with); explicit variables still win.
 */

export interface BenchConfig {
  /** Threads written per saver; each is a run of `steps` checkpoints. */
  threads: number;
  /** Checkpoints per thread (put + putWrites each). */
  steps: number;
  /** Concurrent writers on the write path. */
  writers: number;
  /** The write path is split into this many rounds, the savers in a new random order each, so noise spreads evenly. */
  rounds: number;
  /**
   * Checkpoints per saver for the read measurements: the threads written through the
   * saver, copied by SQL until the tables hold this many (at least the written ones).
   */
  base: number;
  /** Checkpoints per saver for the second round of reads (0: skip it). */
  large: number;
  /** Samples per latency measurement (getTuple, list). */
  samples: number;
  /** Most samples of a metadata-filter query per saver and size. */
  filterSamples: number;
  /** Seconds of each single-insert ceiling. */
  ceilingSeconds: number;
  /** Threads per user in metadata (`user: "u<thread index / threadsPerUser>"`). */
  threadsPerUser: number;
  /** Only these subjects (comma-separated names, e.g. "ours-pg,official-pg"); all when empty. */
  subjects: string[];
  /** Keep the benchmark databases and SQLite files instead of dropping them. */
  keep: boolean;
  /** Write the results into BENCHMARKS.md: "auto" does so only at the default (full) sizes. */
  writeReport: "auto" | "yes" | "no";
  quick: boolean;
}

const FULL = {
  threads: 1000,
  steps: 10,
  base: 50_000,
  large: 500_000,
  samples: 200,
  filterSamples: 25,
  ceilingSeconds: 5,
};

const QUICK: typeof FULL = {
  threads: 200,
  steps: 10,
  base: 4_000,
  large: 20_000,
  samples: 40,
  filterSamples: 8,
  ceilingSeconds: 2,
};

/**
 * `npm run bench:compare`: the workload (threads of 25 steps, 8 writers), the
 * filter at 50k checkpoints, no second size and no single-insert ceilings. As many read
 * samples as the long run: with the savers in random order, 80 left the medians of one
 * saver about 10% apart from run to run, and 200 cost about 10 s more.
 */
const COMPARE: typeof FULL = {
  threads: 400,
  steps: 25,
  base: 50_000,
  large: 0,
  samples: 200,
  filterSamples: 25,
  ceilingSeconds: 0,
};

/** The BENCH_* variables that change what is measured (recorded with the results). */
export const SIZE_VARIABLES = [
  "BENCH_QUICK",
  "BENCH_COMPARE",
  "BENCH_THREADS",
  "BENCH_STEPS",
  "BENCH_WRITERS",
  "BENCH_ROUNDS",
  "BENCH_BASE",
  "BENCH_LARGE",
  "BENCH_SAMPLES",
  "BENCH_FILTER_SAMPLES",
  "BENCH_CEILING_SECONDS",
  "BENCH_THREADS_PER_USER",
  "BENCH_SUBJECTS",
] as const;

function integer(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw.replace(/_/g, ""));
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

function flag(name: string): boolean {
  const raw = process.env[name];
  return raw !== undefined && raw !== "" && raw !== "0" && raw.toLowerCase() !== "false";
}

export function readConfig(): BenchConfig {
  const quick = flag("BENCH_QUICK");
  const compare = flag("BENCH_COMPARE");
  const defaults = compare ? COMPARE : quick ? QUICK : FULL;
  const write = process.env.BENCH_WRITE;
  const config: BenchConfig = {
    threads: integer("BENCH_THREADS", defaults.threads, 1),
    steps: integer("BENCH_STEPS", defaults.steps, 5),
    writers: integer("BENCH_WRITERS", 8, 1),
    rounds: integer("BENCH_ROUNDS", 5, 1),
    base: integer("BENCH_BASE", defaults.base, 0),
    large: integer("BENCH_LARGE", defaults.large, 0),
    samples: integer("BENCH_SAMPLES", defaults.samples, 5),
    filterSamples: integer("BENCH_FILTER_SAMPLES", defaults.filterSamples, 3),
    ceilingSeconds: integer("BENCH_CEILING_SECONDS", defaults.ceilingSeconds, 0),
    threadsPerUser: integer("BENCH_THREADS_PER_USER", 20, 1),
    subjects: (process.env.BENCH_SUBJECTS ?? "")
      .split(",")
      .map((name) => name.trim())
      .filter((name) => name.length > 0),
    keep: flag("BENCH_KEEP"),
    writeReport: write === undefined || write === "" ? "auto" : flag("BENCH_WRITE") ? "yes" : "no",
    quick,
  };
  config.rounds = Math.min(config.rounds, config.threads);
  config.base = Math.max(config.base, config.threads * config.steps);
  return config;
}

/**
 * True when no variable changes the sizes but BENCH_COMPARE: the run whose results
 * BENCHMARKS.md keeps (`npm run bench:compare`).
 */
export function isDefaultRun(): boolean {
  return (
    flag("BENCH_COMPARE") &&
    SIZE_VARIABLES.every((name) => name === "BENCH_COMPARE" || (process.env[name] ?? "") === "")
  );
}
