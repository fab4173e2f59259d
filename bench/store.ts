/**
 * The store (issue 32): a filtered search in one namespace of 400 items while the store
 * grows from 4,000 to 40,000 items in other namespaces (the cost must stay within 2x), on
 * each database; and DrizzleStore beside LangGraph's official PostgresStore on PostgreSQL:
 * put, get and a filtered search, one call at a time.
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

async function timeEach(count: number, run: (i: number) => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = now();
    await run(i);
    times.push(now() - start);
  }
  return median(times);
}

async function sideBySide(): Promise<void> {
  const ours = await DrizzleStore.fromUrl(await freshDatabaseUrl("postgres"));
  await ours.setup();
  const official = PostgresStore.fromConnString(await freshDatabaseUrl("postgres"));
  await official.setup();
  try {
    for (const [name, store] of [
      ["DrizzleStore (postgres.js)", ours],
      ["official PostgresStore (pg)", official],
    ] as const) {
      await fill(store, 0, 4_000);
      const put = await timeEach(OPS, (i) => store.put(["bench", "puts"], `p${i}`, value(i)));
      const get = await timeEach(OPS, (i) => store.get(["bench", "puts"], `p${i}`));
      const search = await timeEach(RUNS, () =>
        store.search(["tenants"], { filter: { kind: "fact", n: { $gte: 10 } }, limit: 10 }),
      );
      console.log(`| ${name} | ${formatMs(put)} | ${formatMs(get)} | ${formatMs(search)} |`);
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
  console.log(`\nPostgreSQL, 4,000 items, median per call (${OPS} puts, ${OPS} gets, ${RUNS} searches)\n`);
  console.log("| store | put | get | filtered search |\n|---|---|---|---|");
  await sideBySide();
}
process.exit(0);
