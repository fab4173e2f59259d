/** Turns the measurements into markdown tables, target checks and the BENCHMARKS.md results block. */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { Ceiling } from "./ceiling.js";
import type { BenchConfig } from "./config.js";
import { formatBytes, formatMs, formatNumber, median, percentile } from "./stats.js";
import type { Family, SizeReport } from "./subjects.js";

export const LATENCY_OPS = {
  getTupleLatest: "getTuple (latest)",
  getTupleById: "getTuple (by id)",
  list10: "list (thread, limit 10)",
} as const;
export type LatencyOp = keyof typeof LATENCY_OPS;

/** The two table sizes the reads run at. */
export type Size = "base" | "large";

export interface ReadResult {
  checkpoints: number;
  latency: Record<LatencyOp, number[]>;
  /** The cross-thread metadata filter. */
  filter: number[];
  filterPlan?: string;
  /** Plan of `getTuple` (latest) as our saver sends it. */
  getTuplePlan?: string;
}

export interface SubjectResult {
  name: string;
  label: string;
  family: Family;
  official: boolean;
  /** Wall time, and CPU time of this process and (PostgreSQL) of the server backends serving the saver. */
  write: { ops: number; ms: number; clientCpuMs: number; serverCpuMs: number };
  /** Bytes on disk of what the saver wrote itself (before any growth by SQL). */
  size?: SizeReport & { checkpoints: number };
  reads: Partial<Record<Size, ReadResult>>;
  problems: string[];
}

export interface RunResults {
  config: BenchConfig;
  command: string;
  startedAt: Date;
  durationMs: number;
  environment: string[];
  filter: { user: string; step: number };
  ceilings: Ceiling[];
  subjects: SubjectResult[];
  notes: string[];
}

const OPS = Object.keys(LATENCY_OPS) as LatencyOp[];

const opsPerSecond = (result: SubjectResult | undefined): number =>
  result && result.write.ms > 0 ? result.write.ops / (result.write.ms / 1000) : Number.NaN;

function latency(result: SubjectResult | undefined, size: Size, op: LatencyOp): number {
  const samples = result?.reads[size]?.latency[op];
  return samples && samples.length > 0 ? median(samples) : Number.NaN;
}

function filterTime(result: SubjectResult | undefined, size: Size): number {
  const samples = result?.reads[size]?.filter;
  return samples && samples.length > 0 ? median(samples) : Number.NaN;
}

const perCheckpoint = (result: SubjectResult | undefined): number =>
  result?.size ? result.size.total / result.size.checkpoints : Number.NaN;

function table(header: string[], rows: string[][], align?: ("l" | "r")[]): string {
  const separator = header.map((_, i) => ((align?.[i] ?? (i === 0 ? "l" : "r")) === "l" ? "---" : "---:"));
  return [header, separator, ...rows].map((row) => `| ${row.join(" | ")} |`).join("\n");
}

const x = (value: number, digits = 2): string => (Number.isFinite(value) ? `${formatNumber(value, digits)}x` : "n/a");

export function sizeLabel(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return "?";
  if (n >= 1000) return `${formatNumber(n / 1000, n % 1000 === 0 ? 0 : 1)}k`;
  return String(n);
}

function find(results: RunResults, name: string): SubjectResult | undefined {
  return results.subjects.find((subject) => subject.name === name);
}

/** The table size a read ran at, as the first saver that ran it reports. */
function sizeOf(results: RunResults, size: Size): number | undefined {
  return results.subjects.find((s) => s.reads[size])?.reads[size]?.checkpoints;
}

export interface Target {
  what: string;
  goal: string;
  value: string;
  met: boolean | undefined;
}

export function targets(results: RunResults): Target[] {
  const oursPg = find(results, "ours-pg");
  const officialPg = find(results, "official-pg");
  const oursSqlite = find(results, "ours-sqlite");
  const officialSqlite = find(results, "official-sqlite");
  const base = sizeLabel(sizeOf(results, "base"));
  const large = sizeLabel(sizeOf(results, "large"));
  const list: Target[] = [];
  const check = (what: string, goal: string, ratio: number, met: (r: number) => boolean, shown = x(ratio)) => {
    list.push({ what, goal, value: shown, met: Number.isFinite(ratio) ? met(ratio) : undefined });
  };
  if (oursPg && officialPg) {
    check(
      "PostgreSQL write path, ours / official ops/s",
      ">= 3x",
      opsPerSecond(oursPg) / opsPerSecond(officialPg),
      (r) => r >= 3,
    );
    for (const op of ["getTupleLatest", "getTupleById"] as const) {
      check(
        `PostgreSQL ${LATENCY_OPS[op]} at ${base}, ours / official median latency`,
        "<= 0.5x",
        latency(oursPg, "base", op) / latency(officialPg, "base", op),
        (r) => r <= 0.5,
      );
    }
    const speedup = filterTime(officialPg, "base") / filterTime(oursPg, "base");
    check(
      `PostgreSQL cross-thread filter at ${base}, official / ours time`,
      ">= 20x faster",
      speedup,
      (r) => r >= 20,
      `${x(speedup, 1)} faster`,
    );
    if (oursPg.reads.large) {
      check(
        `PostgreSQL cross-thread filter, ours at ${large} / ours at ${base}`,
        "<= 1.5x",
        filterTime(oursPg, "large") / filterTime(oursPg, "base"),
        (r) => r <= 1.5,
      );
    }
  }
  if (oursSqlite && officialSqlite) {
    check(
      "SQLite write path, ours / official ops/s",
      ">= 1.5x",
      opsPerSecond(oursSqlite) / opsPerSecond(officialSqlite),
      (r) => r >= 1.5,
    );
    for (const op of ["getTupleLatest", "getTupleById", "list10"] as const) {
      check(
        `SQLite ${LATENCY_OPS[op]} at ${base}, ours / official median latency`,
        "<= 1x",
        latency(oursSqlite, "base", op) / latency(officialSqlite, "base", op),
        (r) => r <= 1,
      );
    }
  }
  // Encryption at rest: the same saver with and without it (docs/encryption.md).
  for (const [plain, encrypted, name] of [
    [oursPg, find(results, "ours-pg-enc"), "PostgreSQL"],
    [oursSqlite, find(results, "ours-sqlite-enc"), "SQLite"],
  ] as const) {
    if (!plain || !encrypted) continue;
    check(
      `${name} write path, encrypted / plain ops/s`,
      ">= 0.85x",
      opsPerSecond(encrypted) / opsPerSecond(plain),
      (r) => r >= 0.85,
    );
    for (const op of ["getTupleLatest", "getTupleById"] as const) {
      check(
        `${name} ${LATENCY_OPS[op]} at ${base}, encrypted / plain median latency`,
        "<= 1.15x",
        latency(encrypted, "base", op) / latency(plain, "base", op),
        (r) => r <= 1.15,
      );
    }
  }
  for (const [ours, official, name] of [
    [oursSqlite, officialSqlite, "SQLite"],
    [oursPg, officialPg, "PostgreSQL"],
  ] as const) {
    if (!ours || !official) continue;
    check(
      `${name} bytes per checkpoint, ours / official`,
      "<= 0.5x",
      perCheckpoint(ours) / perCheckpoint(official),
      (r) => r <= 0.5,
    );
  }
  return list;
}

function spread(values: number[] | undefined): string {
  if (!values || values.length === 0) return "-";
  return `${formatMs(percentile(values, 0.1))} / ${formatMs(median(values))} / ${formatMs(percentile(values, 0.9))} (n=${values.length})`;
}

export function renderResults(results: RunResults): string {
  const { config } = results;
  const written = config.threads * config.steps;
  const baseN = sizeOf(results, "base");
  const largeN = sizeOf(results, "large");
  const base = sizeLabel(baseN);
  const large = sizeLabel(largeN);
  const out: string[] = [];

  out.push(`Measured ${results.startedAt.toISOString()} in ${formatNumber(results.durationMs / 60000, 1)} min with:`);
  out.push("", "```sh", results.command, "```", "");
  out.push(...results.environment.map((line) => `- ${line}`), "");
  out.push(
    `Write path: ${formatNumber(config.threads)} threads x ${config.steps} steps = ${formatNumber(written)} checkpoints per saver, ` +
      `${config.writers} concurrent writers, in ${config.rounds} measured rounds after an unmeasured warm-up round (the first threads of each saver), the savers in a new random order each round. ` +
      `Reads at ${formatNumber(baseN ?? 0)}${largeN ? ` and ${formatNumber(largeN)}` : ""} checkpoints: ` +
      `getTuple / list on random written threads (by id: a random checkpoint of the thread), interleaved across savers in a new random order for every sample, ` +
      `after 60 unmeasured calls of each (so every pooled connection runs its prepared statements with a cached plan), up to ${config.samples} samples each; ` +
      `the filter after up to 60 unmeasured calls (at most 3 s per saver), interleaved the same way; filter: \`list({}, { filter: { user: "${results.filter.user}", step: ${results.filter.step} }, limit: 5 })\`.`,
    "",
  );

  // Main table.
  out.push("### Medians", "");
  const header = [
    "saver",
    "write ops/s",
    ...OPS.map((op) => `${LATENCY_OPS[op]} @ ${base}`),
    `filter @ ${base}`,
    ...(largeN ? [`filter @ ${large}`] : []),
    "bytes / checkpoint",
  ];
  out.push(
    table(
      header,
      results.subjects.map((s) => [
        s.label,
        formatNumber(opsPerSecond(s), 0),
        ...OPS.map((op) => formatMs(latency(s, "base", op))),
        formatMs(filterTime(s, "base")),
        ...(largeN ? [s.reads.large ? formatMs(filterTime(s, "large")) : "-"] : []),
        s.size ? formatNumber(perCheckpoint(s), 0) : "-",
      ]),
    ),
    "",
    "One write op = `put` + `putWrites` (two writes). Latencies are medians of single calls; the filter time includes reading the 5 tuples. " +
      `Bytes per checkpoint: the saver's tables with their indexes after the ${formatNumber(written)} checkpoints it wrote.`,
    "",
  );

  // Ratios.
  const ratioRows: string[][] = [];
  const pair = (family: string, ours?: SubjectResult, official?: SubjectResult) => {
    if (!ours || !official) return;
    ratioRows.push([
      family,
      x(opsPerSecond(ours) / opsPerSecond(official)),
      ...OPS.map((op) => x(latency(ours, "base", op) / latency(official, "base", op))),
      x(filterTime(ours, "base") / filterTime(official, "base"), 3),
      ...(largeN ? [x(filterTime(ours, "large") / filterTime(official, "large"), 3)] : []),
      x(perCheckpoint(ours) / perCheckpoint(official)),
    ]);
  };
  pair("PostgreSQL: ours / official", find(results, "ours-pg"), find(results, "official-pg"));
  pair("SQLite: ours / official", find(results, "ours-sqlite"), find(results, "official-sqlite"));
  if (ratioRows.length > 0) {
    out.push("### Ratios", "");
    out.push(table(["", ...header.slice(1)], ratioRows), "");
    out.push(
      "Write ops/s: above 1 means ours is faster. Latencies, filter times and bytes: below 1 means ours is faster / smaller.",
      "",
    );
  }

  // Targets.
  const targetList = targets(results);
  if (targetList.length > 0) {
    out.push("### Targets", "");
    out.push(
      table(
        ["target", "goal", "measured", ""],
        targetList.map((t) => [t.what, t.goal, t.value, t.met === undefined ? "n/a" : t.met ? "met" : "**missed**"]),
        ["l", "l", "r", "l"],
      ),
      "",
    );
  }

  // Growth.
  if (largeN) {
    out.push(`### Reads at ${base} and ${large} checkpoints`, "");
    out.push(
      table(
        ["saver", ...OPS.map((op) => LATENCY_OPS[op]), "filter"],
        results.subjects
          .filter((s) => s.reads.large)
          .map((s) => {
            const cell = (b: number, l: number) => `${formatMs(b)} -> ${formatMs(l)} (${x(l / b)})`;
            return [
              s.label,
              ...OPS.map((op) => cell(latency(s, "base", op), latency(s, "large", op))),
              cell(filterTime(s, "base"), filterTime(s, "large")),
            ];
          }),
      ),
      "",
      `Median at ${base} -> median at ${large} (growth factor). A read that does not grow with the table stays near 1x.`,
      "",
    );
  }

  // Write path cost.
  out.push("### Write path: CPU per op", "");
  out.push(
    table(
      ["saver", "write ops/s", "CPU in Node, ms/op", "CPU in the PostgreSQL backends, ms/op"],
      results.subjects.map((s) => [
        s.label,
        formatNumber(opsPerSecond(s), 0),
        formatNumber(s.write.clientCpuMs / s.write.ops, 3),
        Number.isFinite(s.write.serverCpuMs) ? formatNumber(s.write.serverCpuMs / s.write.ops, 3) : "-",
      ]),
    ),
    "",
    "Node CPU is the whole benchmark process (serialization, SQL building, drivers; for SQLite and MemorySaver all the work). " +
      "Server CPU is read from /proc for the backends connected to the saver's own database. When the database shares the " +
      "machine's cores, throughput is bounded by the sum of the two rather than by round trips.",
    "",
  );

  // Ceilings.
  if (results.ceilings.length > 0) {
    out.push("### Against a single-insert ceiling", "");
    const rows: string[][] = [];
    for (const ceiling of results.ceilings) {
      const family: Family = ceiling.name.startsWith("mysql") ? "mysql" : "postgres";
      for (const subject of results.subjects.filter((s) => s.family === family)) {
        rows.push([
          subject.label,
          formatNumber(opsPerSecond(subject), 0),
          ceiling.name,
          formatNumber(ceiling.insertsPerSecond, 0),
          x(opsPerSecond(subject) / ceiling.insertsPerSecond, 3),
        ]);
      }
    }
    out.push(table(["saver", "write ops/s", "ceiling", "single inserts/s", "ops / inserts"], rows), "");
    out.push(
      "An op is two saver calls (at least two statements), so 0.5 would mean each call costs what one single-row insert costs.",
      "",
      ...results.ceilings.map((ceiling) => `- ${ceiling.name}: ${ceiling.how}`),
      "",
    );
  }

  // Spread.
  out.push(`### Spread at ${base} (p10 / median / p90)`, "");
  out.push(
    table(
      ["saver", ...OPS.map((op) => LATENCY_OPS[op]), "filter"],
      results.subjects.map((s) => [
        s.label,
        ...OPS.map((op) => spread(s.reads.base?.latency[op])),
        spread(s.reads.base?.filter),
      ]),
    ),
    "",
  );

  // Sizes.
  const sized = results.subjects.filter((s) => s.size);
  if (sized.length > 0) {
    out.push(`### Bytes on disk after ${formatNumber(written)} checkpoints written through each saver`, "");
    out.push(
      table(
        ["saver", "tables (with their indexes)", "total", "per checkpoint", "how"],
        sized.map((s) => {
          const size = s.size as SizeReport & { checkpoints: number };
          return [
            s.label,
            Object.entries(size.tables)
              .map(([name, bytes]) => `${name} ${formatBytes(bytes)}`)
              .join(", "),
            formatBytes(size.total),
            formatNumber(size.total / size.checkpoints, 0),
            size.method,
          ];
        }),
        ["l", "l", "r", "r", "l"],
      ),
      "",
    );
  }

  // Plans.
  const plans: string[] = [];
  for (const s of results.subjects) {
    for (const size of ["base", "large"] as const) {
      const reads = s.reads[size];
      if (reads?.getTuplePlan)
        plans.push(
          `${s.label}, getTuple (latest) at ${sizeLabel(reads.checkpoints)}:`,
          "",
          "```",
          reads.getTuplePlan,
          "```",
          "",
        );
    }
  }
  for (const s of results.subjects) {
    for (const size of ["base", "large"] as const) {
      const reads = s.reads[size];
      if (reads?.filterPlan)
        plans.push(`${s.label}, filter at ${sizeLabel(reads.checkpoints)}:`, "", "```", reads.filterPlan, "```", "");
    }
  }
  if (plans.length > 0) {
    out.push(
      "<details><summary>Query plans (our savers: the SQL they sent, explained with its parameters; official savers: their query shape)</summary>",
      "",
      ...plans,
      "</details>",
      "",
    );
  }

  const problems = results.subjects.flatMap((s) => s.problems.map((p) => `${s.name}: ${p}`));
  if (problems.length > 0 || results.notes.length > 0) {
    out.push("### Notes", "", ...results.notes.map((n) => `- ${n}`), ...problems.map((p) => `- **${p}**`), "");
  }
  return out.join("\n");
}

const START = "<!-- results:start (written by bench/run.ts) -->";
const END = "<!-- results:end -->";

/** Replaces the results block of BENCHMARKS.md (creating the file if needed); the rest is left as it is. */
export function writeReport(path: string, body: string): void {
  const block = `${START}\n${body.trimEnd()}\n${END}`;
  if (!existsSync(path)) {
    writeFileSync(path, `# Benchmarks\n\n## Latest results\n\n${block}\n`);
    return;
  }
  const text = readFileSync(path, "utf8");
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  const next =
    start >= 0 && end > start
      ? `${text.slice(0, start)}${block}${text.slice(end + END.length)}`
      : `${text.trimEnd()}\n\n## Latest results\n\n${block}\n`;
  writeFileSync(path, next);
}
