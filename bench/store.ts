/**
 * The store (issue 32): a filtered search in one namespace of 400 items while the store
 * grows from 4,000 to 40,000 items in other namespaces (the cost must stay within 2x), on
 * each database; and DrizzleStore beside LangGraph's official PostgresStore on PostgreSQL at
 * 4,000 and 40,000 items: put, get and a filtered search in one namespace and across all of
 * them, one call at a time, the two stores interleaved call by call.
 *
 *   bash scripts/with-databases.sh tsx bench/store.ts
 *   BENCH_DIALECTS=sqlite STORE_RUNS=50 tsx bench/store.ts
 *
 * Variables: BENCH_DIALECTS (postgres,mysql,sqlite), STORE_RUNS (searches per size, 100),
 * STORE_OPS (puts and gets of the side-by-side, 500).
 */
import { loadavg } from "node:os";
import type { BaseStore } from "@langchain/langgraph-checkpoint";
import { PostgresStore } from "@langchain/langgraph-checkpoint-postgres/store";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../test/helpers/databases.js";
import { shipped } from "./shipped.js";
import { formatMs, median, now, percentile } from "./stats.js";

const { DrizzleStore } = shipped;

const dialects = (process.env.BENCH_DIALECTS?.split(",") ?? [...DIALECTS]) as DialectName[];
const RUNS = Number(process.env.STORE_RUNS ?? 100);
const OPS = Number(process.env.STORE_OPS ?? 500);
const TARGET = ["tenants", "acme", "memories"];
const TARGET_ITEMS = 400;
const BATCH = 500;

const value = (i: number) => ({ kind: i % 4 === 0 ? "fact" : "chat", n: i % 100, text: `memory number ${i}` });

/** Items in namespaces other than the target, up to `total` items in all. */
async function fill(store: BaseStore, from: number, to: number): Promise<void> {
  for (let start = from; start < to; start += BATCH) {
    const ops = [];
    for (let i = start; i < Math.min(to, start + BATCH); i++) {
      ops.push({ namespace: ["tenants", `t${i % 997}`, "memories"], key: `k${i}`, value: value(i) });
    }
    await store.batch(ops);
  }
}

async function searchCost(store: BaseStore): Promise<{ median: number; p95: number }> {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = now();
    const found = await store.search(TARGET, { filter: { kind: "fact", n: { $gte: 10 } }, limit: 10, offset: 20 });
    times.push(now() - start);
    if (found.length !== 10) throw new Error(`expected a full page, got ${found.length}`);
  }
  return { median: median(times), p95: percentile(times, 0.95) };
}

async function scaling(dialect: DialectName): Promise<void> {
  const store = await DrizzleStore.fromUrl(await freshDatabaseUrl(dialect));
  try {
    await store.setup();
    const ops = Array.from({ length: TARGET_ITEMS }, (_, i) => ({
      namespace: TARGET,
      key: `mine${i}`,
      value: value(i),
    }));
    await store.batch(ops);
    await fill(store, TARGET_ITEMS, 4_000);
    const small = await searchCost(store);
    await fill(store, 4_000, 40_000);
    const large = await searchCost(store);
    console.log(
      `| ${dialect} | ${formatMs(small.median)} (p95 ${formatMs(small.p95)}) | ${formatMs(large.median)} (p95 ${formatMs(large.p95)}) | ${(large.median / small.median).toFixed(2)}x |`,
    );
  } finally {
    await store.close();
  }
}

type Call = "put" | "get" | "search, one namespace" | "search, every namespace";
const CALLS: Call[] = ["put", "get", "search, one namespace", "search, every namespace"];
const FILTER = { kind: "fact", n: { $gte: 10 } };

/** One call of each kind on `store`; the i-th put and get touch the i-th key. */
function call(store: BaseStore, kind: Call, i: number): Promise<unknown> {
  switch (kind) {
    case "put":
      return store.put(["bench", "puts"], `p${i}`, value(i));
    case "get":
      return store.get(["bench", "puts"], `p${i}`);
    case "search, one namespace":
      return store.search(["tenants", `t${i % 997}`, "memories"], { filter: FILTER, limit: 10 });
    case "search, every namespace":
      return store.search(["tenants"], { filter: FILTER, limit: 10 });
  }
}

/**
 * Median time of each call kind on each store, the stores interleaved call by call (the
 * one that goes first alternates): OPS puts and gets, RUNS searches of each kind.
 */
async function interleaved(stores: [string, BaseStore][]): Promise<Map<string, Map<Call, number>>> {
  const times = new Map(stores.map(([name]) => [name, new Map(CALLS.map((kind) => [kind, [] as number[]]))]));
  for (const kind of CALLS) {
    const count = kind === "put" || kind === "get" ? OPS : RUNS;
    for (let i = 0; i < count; i++) {
      for (const [name, store] of i % 2 === 0 ? stores : [...stores].reverse()) {
        const start = now();
        await call(store, kind, i);
        times
          .get(name)
          ?.get(kind)
          ?.push(now() - start);
      }
    }
  }
  return new Map([...times].map(([name, byKind]) => [name, new Map([...byKind].map(([k, t]) => [k, median(t)]))]));
}

async function sideBySide(): Promise<void> {
  const ours = await DrizzleStore.fromUrl(await freshDatabaseUrl("postgres"));
  await ours.setup();
  const official = PostgresStore.fromConnString(await freshDatabaseUrl("postgres"));
  await official.setup();
  const stores: [string, BaseStore][] = [
    ["DrizzleStore (postgres.js)", ours],
    ["official PostgresStore (pg)", official],
  ];
  try {
    console.log(`| store | items | ${CALLS.join(" | ")} |\n|---|---|${CALLS.map(() => "---").join("|")}|`);
    let items = 0;
    for (const size of [4_000, 40_000]) {
      for (const [, store] of stores) await fill(store, items, size);
      items = size;
      const medians = await interleaved(stores);
      for (const [name, byKind] of medians) {
        console.log(
          `| ${name} | ${size.toLocaleString("en")} | ${CALLS.map((kind) => formatMs(byKind.get(kind) ?? Number.NaN)).join(" | ")} |`,
        );
      }
      const [mine, theirs] = [...medians.values()];
      const ratios = CALLS.map((kind) => `${((mine.get(kind) ?? 0) / (theirs.get(kind) ?? 1)).toFixed(2)}x`);
      console.log(`| ours / official | ${size.toLocaleString("en")} | ${ratios.join(" | ")} |`);
    }
  } finally {
    await ours.close();
    await official.stop();
  }
}

console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
console.log("\nFiltered search in one namespace of 400 items (limit 10, offset 20), median of", RUNS, "\n");
console.log("| database | 4,000 items | 40,000 items | ratio |\n|---|---|---|---|");
for (const dialect of dialects) await scaling(dialect);
if (dialects.includes("postgres")) {
  console.log(
    `\nPostgreSQL, beside the official store, median per call (${OPS} puts, ${OPS} gets, ${RUNS} searches of each kind, interleaved)\n`,
  );
  await sideBySide();
}
process.exit(0);
