import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type DeltaChannelHistory,
  DeltaSnapshot,
  isDeltaSnapshot,
  uuid6,
} from "@langchain/langgraph-checkpoint";
import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS } from "../helpers/databases.js";
import {
  type CheckpointSpec,
  EMPTY,
  HistoryWriter,
  newThreadId,
  type OwnDrizzle,
  openDrizzle,
  QueryCounter,
  useFreshSaver,
} from "./support.js";

/** A channel name that needs quoting in every JSON path syntax. */
const ODD = 'br:to:"x".y ü';
const CHANNELS = ["delta", "plain", "scalar", "never", ODD, "unwritten"];

/**
 * Checkpoint i of a chain, written like LangGraph's DeltaChannel does: "delta" has a
 * DeltaSnapshot at the root and a new, valueless version at every later step;
 * "plain" holds a plain value at step 3 only; "scalar" is set at step 6 and then
 * inherited; "never" is only ever written; ODD is set at 2 and cleared at 5.
 */
function step(i: number, label: string): CheckpointSpec {
  const values: Record<string, unknown> = { delta: i === 0 ? new DeltaSnapshot([`${label}-seed`]) : EMPTY };
  if (i === 3) values.plain = [`${label}-plain`];
  if (i > 3) values.plain = EMPTY;
  if (i === 6) values.scalar = 42;
  if (i === 2) values[ODD] = { odd: label };
  if (i === 5) values[ODD] = EMPTY;
  const writes: CheckpointSpec["writes"] = [
    // Stored in the opposite of replay order: task path first, then task id, then idx.
    {
      taskId: "task-a",
      taskPath: "~2",
      writes: [
        ["delta", [`${label}${i}-a0`]],
        ["delta", [`${label}${i}-a1`]],
      ],
    },
    { taskId: "task-c", taskPath: "~1", writes: [["delta", [`${label}${i}-c`]]] },
    { taskId: "task-b", taskPath: "~1", writes: [["delta", [`${label}${i}-b`]]] },
    {
      taskId: "task-p",
      writes: [
        ["plain", [i]],
        [ODD, i],
        ["scalar", i],
        ["other", i],
      ],
    },
  ];
  if (i % 4 === 1) writes.push({ taskId: "task-n", writes: [["never", `${label}-never-${i}`]] });
  return { values, writes };
}

describe.each(DIALECTS)("getDeltaChannelHistory on %s", (dialect) => {
  const db = useFreshSaver(dialect);
  const counter = new QueryCounter();
  let own: OwnDrizzle;
  let saver: DrizzleSaver;
  beforeAll(() => {
    own = openDrizzle(dialect, db.url, counter);
    saver = new DrizzleSaver(own.db);
  });
  afterAll(async () => {
    await own?.close();
  });

  async function chain(writer: HistoryWriter, count: number, options: { ns?: string; parent?: string; label: string }) {
    const ids: string[] = [];
    let parent = options.parent;
    for (let i = 0; i < count; i += 1) {
      parent = await writer.put({ ...step(i, options.label), ns: options.ns, parent });
      ids.push(parent);
    }
    return ids;
  }

  /** The override's result and query count, and the base class's walk over getTuple for the same options. */
  async function both(config: RunnableConfig, channels = CHANNELS) {
    counter.start();
    const fast = await saver.getDeltaChannelHistory({ config, channels });
    const queries = counter.stop();
    const base = (await BaseCheckpointSaver.prototype.getDeltaChannelHistory.call(saver, {
      config,
      channels,
    })) as Record<string, DeltaChannelHistory>;
    return { fast, base, queries };
  }

  const values = (history: DeltaChannelHistory) => history.writes.map(([, , value]) => value);

  it("walks a chain of 12 checkpoints in one query, with the same result as the base walk", async () => {
    const thread = newThreadId("delta");
    const writer = new HistoryWriter(saver, thread);
    const ids = await chain(writer, 12, { label: "m" });

    const latest = await both({ configurable: { thread_id: thread } });
    expect(latest.queries).toBe(1);
    expect(latest.fast).toEqual(latest.base);
    // Spelled out once: the seeds found, and the writes replayed oldest first in (path, task, idx) order.
    const { fast } = latest;
    expect(isDeltaSnapshot(fast.delta.seed)).toBe(true);
    expect((fast.delta.seed as DeltaSnapshot<string[]>).value).toEqual(["m-seed"]);
    expect(values(fast.delta).slice(0, 8)).toEqual([
      ["m0-b"],
      ["m0-c"],
      ["m0-a0"],
      ["m0-a1"],
      ["m1-b"],
      ["m1-c"],
      ["m1-a0"],
      ["m1-a1"],
    ]);
    expect(values(fast.delta)).toHaveLength(11 * 4);
    expect(isDeltaSnapshot(fast.plain.seed)).toBe(false);
    expect(fast.plain.seed).toEqual(["m-plain"]);
    expect(values(fast.plain)).toEqual([[3], [4], [5], [6], [7], [8], [9], [10]]);
    expect(fast.scalar).toEqual({ seed: 42, writes: [["task-p", "scalar", 10]] });
    expect("seed" in fast.never).toBe(false);
    expect(values(fast.never)).toEqual(["m-never-1", "m-never-5", "m-never-9"]);
    expect(fast[ODD].seed).toEqual({ odd: "m" });
    expect(values(fast[ODD])).toEqual([4, 5, 6, 7, 8, 9, 10]);
    expect(fast.unwritten).toEqual({ writes: [] });

    const explicit = await both(writer.config(ids[11]));
    expect(explicit.queries).toBe(1);
    expect(explicit.fast).toEqual(latest.fast);

    for (const at of [0, 1, 3, 4, 6, 7]) {
      const middle = await both(writer.config(ids[at]));
      expect({ at, queries: middle.queries }).toEqual({ at, queries: 1 });
      expect(middle.fast).toEqual(middle.base);
    }
  });

  it("follows the parent chain of a fork, not the newest branch", async () => {
    const thread = newThreadId("delta-fork");
    const writer = new HistoryWriter(saver, thread);
    const ids = await chain(writer, 10, { label: "f" });
    // Forks from checkpoint 4, written after the whole chain (so not the newest branch's parents).
    const forkA = await writer.put({
      parent: ids[4],
      values: { plain: ["fork"] },
      writes: [
        {
          taskId: "task-f",
          writes: [
            ["delta", ["fork-a"]],
            ["plain", ["fork-a"]],
          ],
        },
      ],
    });
    const forkB = await writer.put({
      parent: forkA,
      values: { delta: EMPTY },
      writes: [{ taskId: "task-f", writes: [["delta", ["fork-b"]]] }],
    });
    const forkC = await writer.put({ parent: forkB, values: { scalar: EMPTY } });

    const fork = await both(writer.config(forkC));
    expect(fork.queries).toBe(1);
    expect(fork.fast).toEqual(fork.base);
    expect(values(fork.fast.delta).slice(-2)).toEqual([["fork-a"], ["fork-b"]]);
    expect(values(fork.fast.delta)).toHaveLength(4 * 5 + 2);
    expect(fork.fast.plain.seed).toEqual(["fork"]);
    // The newest checkpoint (forkC) is the fork's tip, so "latest" follows the fork too.
    const latest = await both({ configurable: { thread_id: thread, checkpoint_ns: "" } });
    expect(latest.fast).toEqual(fork.fast);
    // The original branch is unaffected by the fork.
    const original = await both(writer.config(ids[9]));
    expect(original.queries).toBe(1);
    expect(original.fast).toEqual(original.base);
    expect(values(original.fast.delta).some((value) => JSON.stringify(value).includes("fork"))).toBe(false);
  });

  it("walks a subgraph namespace on its own", async () => {
    const thread = newThreadId("delta-ns");
    const child = `child:${uuid6(-1)}`;
    const writer = new HistoryWriter(saver, thread);
    await chain(writer, 10, { label: "root" });
    const sub = await chain(writer, 11, { ns: child, label: "sub" });

    const inChild = await both({ configurable: { thread_id: thread, checkpoint_ns: child } });
    expect(inChild.queries).toBe(1);
    expect(inChild.fast).toEqual(inChild.base);
    expect((inChild.fast.delta.seed as DeltaSnapshot<string[]>).value).toEqual(["sub-seed"]);
    expect(values(inChild.fast.delta)).toHaveLength(10 * 4);
    expect(JSON.stringify(inChild.fast).includes("root")).toBe(false);
    const explicit = await both(writer.config(sub[10], child));
    expect(explicit.fast).toEqual(inChild.fast);

    const inRoot = await both({ configurable: { thread_id: thread, checkpoint_ns: "" } });
    expect(inRoot.fast).toEqual(inRoot.base);
    expect(JSON.stringify(inRoot.fast).includes("sub")).toBe(false);
  });

  it("returns empty histories for an unknown thread, namespace or checkpoint, and nothing for no channels", async () => {
    const thread = newThreadId("delta-known");
    const writer = new HistoryWriter(saver, thread);
    await chain(writer, 3, { label: "k" });
    const empty = Object.fromEntries(CHANNELS.map((channel) => [channel, { writes: [] }]));
    for (const config of [
      { configurable: { thread_id: newThreadId("delta-unknown") } },
      { configurable: { thread_id: thread, checkpoint_ns: `child:${uuid6(-1)}` } },
      { configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: uuid6(-1) } },
    ]) {
      const result = await both(config);
      expect(result.queries).toBe(1);
      expect(result.fast).toEqual(result.base);
      expect(result.fast).toEqual(empty);
    }
    // The root checkpoint has no ancestors.
    const [first] = await (async () => {
      const found: string[] = [];
      for await (const tuple of saver.list({ configurable: { thread_id: thread } }))
        found.unshift(String(tuple.config.configurable?.checkpoint_id));
      return found;
    })();
    const root = await both(writer.config(first));
    expect(root.fast).toEqual(root.base);
    expect(root.fast).toEqual(empty);

    const none = await both({ configurable: { thread_id: thread } }, []);
    expect(none.queries).toBeLessThanOrEqual(1);
    expect(none.fast).toEqual(none.base);
    expect(none.fast).toEqual({});
  });

  it("gives the same result when called again, and after more checkpoints are added", async () => {
    const thread = newThreadId("delta-again");
    const writer = new HistoryWriter(saver, thread);
    const ids = await chain(writer, 10, { label: "g" });
    const first = await both(writer.config(ids[9]));
    const second = await both(writer.config(ids[9]));
    expect(second).toEqual(first);
    await writer.put({ ...step(10, "g"), parent: ids[9] });
    const third = await both(writer.config(ids[9]));
    expect(third).toEqual(first);
    const newest = await both({ configurable: { thread_id: thread } });
    expect(newest.queries).toBe(1);
    expect(newest.fast).toEqual(newest.base);
    expect(values(newest.fast.delta)).toHaveLength(values(first.fast.delta).length + 4);
  });
});
