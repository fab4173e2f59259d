import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { type BaseCheckpointSaver, maxChannelVersion } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import type { DrizzleSaver } from "../../src/index.js";
import { nextChannelVersion } from "../../src/savers/write/versions.js";
import { DIALECTS } from "../helpers/databases.js";
import { newThreadId, threadConfig, useFreshSaver } from "../lifecycle/support.js";

/**
 * Threads may carry LangGraph's default integer versions (written by another saver,
 * an import or the API). Read back, they must order below every version this saver
 * makes, or LangGraph skips channels and stops triggering nodes.
 */

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }),
  label: Annotation<string>({ reducer: (_, next) => next, default: () => "" }),
});

/**
 * Labels the thread once, then increments until the count is a multiple of 10. The
 * label's channel keeps the small version of the first run: LangGraph then compares
 * it, as text, with the versions the later run makes.
 */
function countingGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode("name", () => ({ label: "counter" }))
    .addNode("increment", (state) => ({ count: state.count + 1 }))
    .addConditionalEdges(START, (state) => (state.label === "" ? "name" : "increment"))
    .addEdge("name", "increment")
    .addConditionalEdges("increment", (state) => (state.count % 10 === 0 ? END : "increment"))
    .compile({ checkpointer });
}

/** The same saver with LangGraph's default versions (1, 2, 3, ...), as other savers write them. */
function withIntegerVersions(saver: DrizzleSaver): DrizzleSaver {
  return new Proxy(saver, {
    get(target, property, receiver) {
      if (property === "getNextVersion") return (current: number | undefined) => (current ?? 0) + 1;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A version in the 0.1.0 form: "<counter, 32 digits>.<random, 16 digits>". */
const longForm = (counter: number) => `${String(counter).padStart(32, "0")}.${"7".repeat(16)}`;
const LONG_FORM = /^\d{32}\.\d{16}$/;
const counterOf = (version: unknown) => {
  const text = String(version);
  return Number(text.startsWith("0") ? text.split(".")[0] : text.slice(1).split(".")[0]);
};

/** The same saver numbering new threads as 0.1.0 did (the 32-digit form). */
function withLongFormVersions(saver: DrizzleSaver): DrizzleSaver {
  return new Proxy(saver, {
    get(target, property, receiver) {
      if (property === "getNextVersion") {
        return (current: string | undefined) =>
          current === undefined ? longForm(1) : target.getNextVersion(current as unknown as number);
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("the form of string channel versions", () => {
  it("gives a new thread 24 characters: class 1, an 8-digit counter and 14 random digits", () => {
    const first = String(nextChannelVersion(undefined));
    expect(first).toMatch(/^100000001\.\d{14}$/);
    expect(String(nextChannelVersion(first))).toMatch(/^100000002\.\d{14}$/);
  });

  it("orders versions by counter under < and localeCompare in any locale, across the class boundary", () => {
    const counters = [1, 2, 9, 10, 99, 100, 12_345_678, 99_999_998];
    const versions = counters.map((counter) =>
      String(nextChannelVersion(`1${String(counter - 1).padStart(8, "0")}.0`)),
    );
    let last = versions[versions.length - 1];
    for (let i = 0; i < 3; i++) {
      last = String(nextChannelVersion(last));
      versions.push(last);
    }
    expect(versions.slice(-3).map(counterOf)).toEqual([99_999_999, 100_000_000, 100_000_001]);
    expect(versions[versions.length - 2]).toMatch(/^20000000100000000\.\d{14}$/);
    // Every version of the 0.1.0 form sorts below every current one.
    const all = [longForm(3), longForm(99_999_999_999), ...versions];
    expect([...all].reverse().sort()).toEqual(all);
    for (const locale of ["en", "cs", "lt", "sk", "th", "ja", "zh", "ar", "tr", "de-u-co-phonebk"]) {
      const collator = new Intl.Collator(locale);
      expect([[...all].reverse().sort(collator.compare), locale]).toEqual([all, locale]);
    }
    expect(maxChannelVersion(...[...all].reverse())).toBe(all[all.length - 1]);
  });

  it("numbers a thread stored in the 0.1.0 form on in that form", () => {
    const next = String(nextChannelVersion(longForm(13)));
    expect(next).toMatch(LONG_FORM);
    expect(counterOf(next)).toBe(14);
    expect(longForm(13) < next).toBe(true);
  });

  it("gives every fork of a version a version of its own", () => {
    const parent = String(nextChannelVersion(undefined));
    expect(new Set(Array.from({ length: 1000 }, () => nextChannelVersion(parent))).size).toBe(1000);
  });
});

describe.each(DIALECTS)("the forms of string channel versions on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("stores a new thread's versions in the short form", async () => {
    const config = threadConfig(newThreadId("short-versions"));
    expect((await countingGraph(db.saver).invoke({ count: 0 }, config)).count).toBe(10);
    const versions = Object.values((await db.saver.getTuple(config))?.checkpoint.channel_versions ?? {});
    expect(versions.length).toBeGreaterThan(0);
    for (const version of versions) expect(String(version)).toMatch(/^1\d{8}\.\d{14}$/);
  });

  it("continues a thread an earlier release numbered in the 32-digit form, in that form", async () => {
    const config = threadConfig(newThreadId("long-versions"));
    expect((await countingGraph(withLongFormVersions(db.saver)).invoke({ count: 0 }, config)).count).toBe(10);
    expect((await countingGraph(db.saver).invoke({ count: 10 }, config)).count).toBe(20);
    const state = await countingGraph(db.saver).getState(config);
    expect(state.values).toEqual({ count: 20, label: "counter" });
    const versions = Object.values((await db.saver.getTuple(config))?.checkpoint.channel_versions ?? {});
    for (const version of versions) expect(String(version)).toMatch(LONG_FORM);
  });
});

describe.each(DIALECTS)("integer channel versions from other savers on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("continues a thread whose first steps have integer versions", async () => {
    const config = threadConfig(newThreadId("integer-versions"));
    const first = await countingGraph(withIntegerVersions(db.saver)).invoke({ count: 0 }, config);
    expect(first.count).toBe(10);
    const stored = await db.saver.getTuple(config);
    expect(Object.values(stored?.checkpoint.channel_versions ?? {}).length).toBeGreaterThan(0);

    const second = await countingGraph(db.saver).invoke({ count: 10 }, config);
    expect(second.count).toBe(20);
    const state = await countingGraph(db.saver).getState(config);
    expect(state.values).toEqual({ count: 20, label: "counter" });
    // The walk finds values by the versions stored in SQL, numbers with a fraction too.
    const history = await db.saver.getDeltaChannelHistory({ config, channels: ["count"] });
    expect(history.count.seed).toBe(19);
  });

  it("numbers the next version of a numbered channel above it, and every fork apart", () => {
    const next = db.saver.getNextVersion(13);
    expect(typeof next).toBe("number");
    expect(next).toBeGreaterThan(14);
    expect(next).toBeLessThan(15);
    expect(db.saver.getNextVersion(next)).toBeGreaterThan(15);
    const forks = new Set(Array.from({ length: 50 }, () => db.saver.getNextVersion(13)));
    expect(forks.size).toBe(50);
  });

  it("reads a checkpoint mixing integer versions with ours in an order LangGraph gets right", async () => {
    const config = threadConfig(newThreadId("mixed-read"));
    const ours = "00000000000000000000000000000013.4547225041106219";
    const saved = await db.saver.put(
      config,
      {
        v: 4,
        id: "1f0a0000-0000-6000-8000-000000000001",
        ts: new Date().toISOString(),
        channel_values: { a: "A", b: "B", c: "C" },
        channel_versions: { a: 2, b: ours, c: "3" },
        versions_seen: { node: { a: 2, b: ours } },
      },
      { source: "loop", step: 0, parents: {} },
      { a: 2, b: ours, c: "3" },
    );
    const tuple = await db.saver.getTuple(saved);
    const versions = tuple?.checkpoint.channel_versions ?? {};
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "A", b: "B", c: "C" });
    const [a, b, c] = [versions.a, versions.b, versions.c].map(String);
    const next = String(db.saver.getNextVersion(versions.b as number));
    // LangGraph compares versions as text (localeCompare and <).
    expect(maxChannelVersion(...Object.values(versions))).toBe(versions.b);
    expect(a.localeCompare(b)).toBeLessThan(0);
    expect(c.localeCompare(b)).toBeLessThan(0);
    expect(b < next).toBe(true);
    expect(String(tuple?.checkpoint.versions_seen.node.a) < b).toBe(true);

    // A child that leaves `a` and `c` unchanged still finds their values.
    const child = await db.saver.put(
      saved,
      {
        ...(tuple?.checkpoint ?? ({} as never)),
        id: "1f0a0000-0000-6000-8000-000000000002",
        channel_values: { b: "B2" },
        channel_versions: { ...versions, b: next },
      },
      { source: "loop", step: 1, parents: {} },
      { b: next },
    );
    const read = await db.saver.getTuple(child);
    expect(read?.checkpoint.channel_values).toEqual({ a: "A", b: "B2", c: "C" });
    expect(read?.checkpoint.channel_versions).toEqual({ ...versions, b: next });
  });

  it("finds values stored under numbered versions in the delta-channel walk", async () => {
    const config = threadConfig(newThreadId("numbered-walk"));
    // 20.056774307583 is one SQLite prints with 17 digits; 14.5 and 12 are short.
    const versions = { a: 20.056774307583, b: 14.5, c: 12 };
    const parent = await db.saver.put(
      config,
      {
        v: 4,
        id: "1f0a0000-0000-6000-8000-000000000001",
        ts: "",
        channel_values: { a: "A", b: "B", c: "C" },
        channel_versions: versions,
        versions_seen: {},
      },
      { source: "loop", step: 0, parents: {} },
      versions,
    );
    const child = await db.saver.put(
      parent,
      {
        v: 4,
        id: "1f0a0000-0000-6000-8000-000000000002",
        ts: "",
        channel_values: {},
        channel_versions: versions,
        versions_seen: {},
      },
      { source: "loop", step: 1, parents: {} },
      {},
    );
    const history = await db.saver.getDeltaChannelHistory({ config: child, channels: ["a", "b", "c"] });
    expect(history).toEqual({
      a: { seed: "A", writes: [] },
      b: { seed: "B", writes: [] },
      c: { seed: "C", writes: [] },
    });
  });

  it("returns integer-only versions as they were stored", async () => {
    const config = threadConfig(newThreadId("integer-only"));
    const checkpoint = {
      v: 4,
      id: "1f0a0000-0000-6000-8000-000000000001",
      ts: new Date().toISOString(),
      channel_values: { a: "A" },
      channel_versions: { a: 2 },
      versions_seen: { node: { a: 1 } },
    };
    const saved = await db.saver.put(config, checkpoint, { source: "loop", step: 0, parents: {} }, { a: 2 });
    expect((await db.saver.getTuple(saved))?.checkpoint).toEqual(checkpoint);
  });
});
