import { DeltaSnapshot, isDeltaSnapshot } from "@langchain/langgraph-checkpoint";
import postgres from "postgres";
import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS } from "../helpers/databases.js";
import {
  type ChainStep,
  CLEAN,
  cloneThread,
  EMPTY,
  insertChain,
  integrity,
  newThreadId,
  type OwnDrizzle,
  openDrizzle,
  QueryCounter,
  rowCounts,
  runIdOf,
  storedCheckpoints,
  useFreshSaver,
} from "./support.js";

/**
 * Threads longer than the small histories of the other files: the lifecycle
 * methods must not depend on a thread being short (statement parameter limits,
 * recursion limits). The histories are written straight into the tables with the
 * rows the saver itself would store, so they take seconds to build.
 */

const LONG = 7000;
const TAIL = 10;

/** A node of PostgreSQL's JSON plan, as EXPLAIN ANALYZE writes it (counts per loop). */
interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: PlanNode[];
}

/** Rows the plan's scans (of `tables` only) read: those they returned and those their conditions dropped. */
function rowsRead(node: PlanNode, tables = /./): number {
  const scans = node["Node Type"].endsWith("Scan") && tables.test(node["Relation Name"] ?? "");
  const perLoop =
    node["Actual Rows"] + (node["Rows Removed by Filter"] ?? 0) + (node["Rows Removed by Index Recheck"] ?? 0);
  const own = scans ? perLoop * node["Actual Loops"] : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child, tables), 0);
}

/**
 * A step of a long chat-like thread: "a" and "c" change every time, "b" is cleared
 * every other step, "d" is always cleared, "big" is written once by the root; one
 * write every ten steps. The last TAIL steps belong to another run.
 */
function chatStep(i: number): ChainStep {
  return {
    values:
      i === 0
        ? { big: "B".repeat(1000), a: i, b: i, c: -i, d: i }
        : { a: i, b: i % 2 === 1 ? EMPTY : i, c: -i, d: EMPTY },
    writes: i % 10 === 9 ? [["log", `after ${i}`]] : [],
    runId: i < LONG - TAIL ? "long-run" : "tail-run",
  };
}

describe.each(DIALECTS)("long threads on %s", (dialect) => {
  const db = useFreshSaver(dialect);
  const counter = new QueryCounter();
  let own: OwnDrizzle;
  let logged: DrizzleSaver;
  // One thread of LONG checkpoints, and copies of it made with plain SQL.
  const pruned = newThreadId("long-prune");
  const runs = newThreadId("long-runs");
  const planned = newThreadId("long-planned");
  const replayed = newThreadId("long-replayed");
  let ids: string[] = [];
  beforeAll(async () => {
    own = openDrizzle(dialect, db.url, counter);
    logged = new DrizzleSaver(own.db);
    ids = await insertChain(db.raw, db.saver, pruned, LONG, chatStep);
    await cloneThread(db.raw, pruned, [runs, planned, replayed]);
  });
  afterAll(async () => {
    await own?.close();
  });
  const config = (thread: string, id: string) => ({
    configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: id },
  });

  it(`copyThread copies a thread of ${LONG} checkpoints, every row`, async () => {
    const copy = newThreadId("long-copy");
    await db.saver.copyThread(pruned, copy);
    expect(await rowCounts(db.raw, copy)).toEqual(await rowCounts(db.raw, pruned));
    expect(await storedCheckpoints(db.raw, copy)).toEqual(await storedCheckpoints(db.raw, pruned));
    for (const id of [ids[0], ids[LONG / 2], ids[LONG - 1]]) {
      expect(await db.saver.getTuple(config(copy, id))).toEqual(
        JSON.parse(JSON.stringify(await db.saver.getTuple(config(pruned, id))).replaceAll(pruned, copy)),
      );
    }
    expect(await integrity(db.raw, [copy])).toEqual(CLEAN);
  });

  it(`prune keep_latest of a thread with ${LONG} checkpoints keeps its newest, whole`, async () => {
    const newest = ids[ids.length - 1];
    const before = await db.saver.getTuple(config(pruned, newest));
    expect(before?.checkpoint.channel_values).toEqual({ big: "B".repeat(1000), a: LONG - 1, c: 1 - LONG });
    expect(before?.pendingWrites).toEqual([[`task-${LONG - 1}`, "log", `after ${LONG - 1}`]]);
    expect(await rowCounts(db.raw, pruned)).toEqual({
      checkpoints: LONG,
      checkpoint_blobs: 5 + 4 * (LONG - 1),
      checkpoint_writes: LONG / 10,
    });

    await db.saver.prune([pruned]);

    expect(await storedCheckpoints(db.raw, pruned)).toEqual([{ ns: "", id: newest, parent: null }]);
    expect(await db.saver.getTuple(config(pruned, newest))).toEqual({ ...before, parentConfig: undefined });
    expect(await rowCounts(db.raw, pruned)).toEqual({ checkpoints: 1, checkpoint_blobs: 5, checkpoint_writes: 1 });
    expect(await integrity(db.raw, [pruned])).toEqual(CLEAN);
  });

  if (dialect === "postgres") {
    /**
     * A statement the saver sent, run again on the copy `replayed` with a generic plan in a
     * transaction rolled back: its plan, with the rows each node read.
     */
    const planGeneric = async (text: string, params: unknown[]): Promise<PlanNode> => {
      const literals = params.map((value) =>
        value === null ? "null" : `'${String(value === planned ? replayed : value).replaceAll("'", "''")}'`,
      );
      const client = postgres(db.url, { max: 1, onnotice: () => {} });
      try {
        await client.unsafe("begin");
        await client.unsafe(`prepare replayed as ${text}`);
        await client.unsafe("set local plan_cache_mode = force_generic_plan");
        const [row] = await client.unsafe(`explain (analyze, format json) execute replayed(${literals.join(", ")})`);
        await client.unsafe("rollback");
        return (row["QUERY PLAN"] as { Plan: PlanNode }[])[0].Plan;
      } finally {
        await client.end();
      }
    };

    // Blobs were looked up as a semi-join per checkpoint, which a generic plan ran as a scan
    // of every value of the thread: getTuple took 10 times as long on a thread of 3,000
    // checkpoints as on a short one, a page of ten 50 times.
    it("getTuple and a page of list read the rows they return, whatever the plan, not the whole thread", async () => {
      for (const read of [
        () => logged.getTuple({ configurable: { thread_id: planned, checkpoint_ns: "" } }),
        () => logged.getTuple(config(planned, ids[LONG / 2])),
        async () => {
          for await (const _ of logged.list({ configurable: { thread_id: planned } }, { limit: 10 }));
        },
      ]) {
        counter.start();
        await read();
        counter.stop();
        expect(counter.statements.length).toBeGreaterThan(0);
        for (const [i, text] of counter.statements.entries()) {
          const plan = await planGeneric(text, counter.params[i]);
          // A page of ten checkpoints names 50 values; the thread holds 28,000.
          expect(rowsRead(plan, /^checkpoint(s|_blobs)_p/)).toBeLessThanOrEqual(100);
        }
      }
    });

    // A generic plan (fromUrl's connections ask for them) or one made without statistics
    // takes a long thread for a short one: it reads the thread's rows through its key and
    // tests each against the statement's list of 500 ids or values, so that a prune of n
    // checkpoints cost about n squared (28 s for this thread). Each delete is replayed here,
    // planned generic, on a copy of the thread: it must read only the rows it deletes, and
    // those inside its range that stay.
    it("prune's deletes read only the rows they delete, whatever the plan, not the whole thread", async () => {
      counter.start();
      await logged.prune([planned]);
      counter.stop();
      const deletes = counter.statements.flatMap((text, i) =>
        /^delete from "checkpoint(s|_writes|_blobs)"/.test(text) ? [{ text, params: counter.params[i] }] : [],
      );
      // Checkpoints and writes in 14 pieces each, the 4 values of each checkpoint in 56.
      expect(deletes).toHaveLength(14 + 14 + 56);
      for (const { text, params } of deletes) {
        const plan = await planGeneric(text, params);
        // The 5 values the newest checkpoint keeps may lie inside a piece's range.
        expect(rowsRead(plan)).toBeLessThanOrEqual((plan.Plans?.[0]["Actual Rows"] ?? 0) + 5);
      }
      expect(await rowCounts(db.raw, planned)).toEqual({ checkpoints: 1, checkpoint_blobs: 5, checkpoint_writes: 1 });
    });
  }

  it(`deleteForRuns removes a run of ${LONG - TAIL} checkpoints, re-linking what follows it`, async () => {
    const kept = ids.slice(LONG - TAIL);
    const before = await Promise.all(kept.map((id) => db.saver.getTuple(config(runs, id))));
    expect(before.every((tuple) => runIdOf(tuple?.metadata) === "tail-run")).toBe(true);

    await db.saver.deleteForRuns(["long-run"]);

    expect(await storedCheckpoints(db.raw, runs)).toEqual(
      kept.map((id, i) => ({ ns: "", id, parent: i === 0 ? null : kept[i - 1] })),
    );
    const after = await Promise.all(kept.map((id) => db.saver.getTuple(config(runs, id))));
    expect(after).toEqual(before.map((tuple, i) => (i === 0 ? { ...tuple, parentConfig: undefined } : tuple)));
    expect(await integrity(db.raw, [runs])).toEqual(CLEAN);
  });

  it("getDeltaChannelHistory walks a chain of 1,100 checkpoints in two queries (900 ancestors each), to the root's snapshot", async () => {
    const thread = newThreadId("long-delta");
    const count = 1100;
    await insertChain(db.raw, db.saver, thread, count, (i) => ({
      values: { delta: i === 0 ? new DeltaSnapshot(["seed"]) : EMPTY, recent: i === count - 10 ? "recent" : EMPTY },
      writes: [
        ["delta", [`w${i}`]],
        ["recent", i],
      ],
    }));

    counter.start();
    const history = await logged.getDeltaChannelHistory({
      config: { configurable: { thread_id: thread } },
      channels: ["delta", "recent"],
    });
    // One recursive query walks 900 ancestors (below MySQL's and MariaDB's recursion limit of 1000).
    expect(counter.stop()).toBe(2);
    // Every ancestor's write, back to the root, whose snapshot is the seed.
    expect({ writes: history.delta.writes.length, seed: history.delta.seed }).toEqual({
      writes: count - 1,
      seed: { lg_name: "DeltaSnapshot", value: ["seed"] },
    });
    expect(isDeltaSnapshot(history.delta.seed)).toBe(true);
    expect((history.delta.seed as DeltaSnapshot<string[]>).value).toEqual(["seed"]);
    expect(history.delta.writes).toHaveLength(count - 1);
    expect(history.delta.writes.map(([, , value]) => value)).toEqual(
      Array.from({ length: count - 1 }, (_, i) => [`w${i}`]),
    );
    expect(history.recent).toEqual({
      seed: "recent",
      writes: Array.from({ length: 9 }, (_, k) => [`task-${count - 10 + k}`, "recent", count - 10 + k]),
    });
  });
});
