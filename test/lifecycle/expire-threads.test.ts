import { Command } from "@langchain/langgraph";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { type DrizzleSaver, InvalidInputError, type PruneStrategy } from "../../src/index.js";
import { buildTripGraph, normalize } from "../graphs/graphs.js";
import { DIALECTS, type DialectName } from "../helpers/databases.js";
import {
  atMillis,
  CLEAN,
  cloneThread,
  dumpTables,
  HistoryWriter,
  hoursAgo,
  integrity,
  newestPerNamespace,
  newThreadId,
  type RawDatabase,
  setCreatedAt,
  storedCheckpoints,
  storedThreads,
  TABLES,
  type TableDump,
  threadConfig,
  threadView,
  withFreshSaver,
} from "./support.js";

const HOUR = 3_600_000;

/** Runs expireThreads and records every progress report. */
async function expire(
  saver: DrizzleSaver,
  options: { idleSince: Date; strategy?: PruneStrategy; batchSize?: number },
): Promise<{ count: number; progress: number[] }> {
  const progress: number[] = [];
  const count = await saver.expireThreads({ ...options, onProgress: ({ threads }) => progress.push(threads) });
  return { count, progress };
}

/** Progress reports grow with every batch, by at most a batch, up to the total returned. */
function expectProgress(progress: number[], total: number, batchSize: number) {
  expect(progress.length).toBeGreaterThanOrEqual(Math.ceil(total / batchSize));
  let previous = 0;
  for (const threads of progress) {
    expect(threads).toBeGreaterThan(previous);
    expect(threads - previous).toBeLessThanOrEqual(batchSize);
    previous = threads;
  }
  expect(previous).toBe(total);
}

/** Rows of a dump grouped by thread. */
function byThread(dump: TableDump): Map<string, TableDump> {
  const groups = new Map<string, TableDump>();
  for (const table of TABLES) {
    for (const row of dump[table]) {
      const id = String(row.thread_id);
      const group = groups.get(id) ?? { checkpoints: [], checkpoint_blobs: [], checkpoint_writes: [] };
      groups.set(id, group);
      group[table].push(row);
    }
  }
  return groups;
}

function idleSince(hours: number): Date {
  return new Date(Date.now() - hours * HOUR);
}

describe.each(DIALECTS)("expireThreads on %s", (dialect: DialectName) => {
  it("deletes the threads idle since the given time, with all their rows, and keeps the others", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      const old = [newThreadId("exp-old"), newThreadId("exp-old")];
      const fresh = newThreadId("exp-fresh");
      for (const id of old) {
        const w = new HistoryWriter(saver, id);
        const ids = await w.chain(3);
        await w.put({ parent: ids[0], values: { step: "fork" } });
        await w.chain(2, { ns: `child:${uuid6(-1)}` });
      }
      await new HistoryWriter(saver, fresh).chain(2);
      await setCreatedAt(raw, old, hoursAgo(dialect, 240));
      const freshRows = await dumpTables(raw, [fresh]);

      const { count, progress } = await expire(saver, { idleSince: idleSince(120) });

      expect(count).toBe(2);
      expect(progress).toEqual([2]);
      expect(await storedThreads(raw)).toEqual([fresh]);
      expect(await dumpTables(raw, [fresh])).toEqual(freshRows);
      expect(await integrity(raw)).toEqual(CLEAN);
      for (const id of old) expect(await saver.getTuple(threadConfig(id))).toBeUndefined();

      // Again: nothing is idle any more.
      expect(await expire(saver, { idleSince: idleSince(120) })).toEqual({ count: 0, progress: [] });
      expect(await dumpTables(raw, [fresh])).toEqual(freshRows);
    });
  });

  it("decides by the newest checkpoint of any branch; keep_latest keeps the newest fork's tip", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      // Active: an old main branch with a recent fork from an old checkpoint.
      const active = newThreadId("exp-branch-active");
      const a = new HistoryWriter(saver, active);
      const aMain = await a.chain(4);
      await setCreatedAt(raw, [active], hoursAgo(dialect, 240));
      await a.put({ parent: aMain[1], values: { step: "recent fork" } });
      // Idle: a fork written last, everything old.
      const idle = newThreadId("exp-branch-idle");
      const b = new HistoryWriter(saver, idle);
      const bMain = await b.chain(4);
      const tip = await b.put({
        parent: bMain[1],
        values: { step: "old fork" },
        writes: [{ taskId: "t", writes: [["step", "pending"]] }],
      });
      await setCreatedAt(raw, [idle], hoursAgo(dialect, 240));
      const activeRows = await dumpTables(raw, [active]);
      const idleBefore = await threadView(saver, idle);

      const { count, progress } = await expire(saver, { idleSince: idleSince(120), strategy: "keep_latest" });

      expect(count).toBe(1);
      expect(progress).toEqual([1]);
      expect(await dumpTables(raw, [active])).toEqual(activeRows);
      expect(await storedCheckpoints(raw, idle)).toEqual([{ ns: "", id: tip, parent: null }]);
      const kept = idleBefore.find((tuple) => tuple.id === tip);
      expect(await threadView(saver, idle)).toEqual([{ ...kept, parent: null }]);
      expect(await integrity(raw)).toEqual(CLEAN);
    });
  });

  it("counts subgraph namespaces: a recent subgraph checkpoint keeps a thread; an idle paused graph keeps one checkpoint per namespace and resumes", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      const child = `child:${uuid6(-1)}`;
      const activeChild = newThreadId("exp-ns-active");
      const w = new HistoryWriter(saver, activeChild);
      await w.chain(3);
      await setCreatedAt(raw, [activeChild], hoursAgo(dialect, 240));
      await w.chain(2, { ns: child });
      const activeRows = await dumpTables(raw, [activeChild]);

      const graph = buildTripGraph(saver, { confirm: 0 });
      const paused = newThreadId("exp-ns-trip");
      const twin = newThreadId("exp-ns-twin");
      for (const id of [paused, twin]) await graph.invoke({ destination: "Lima" }, threadConfig(id));
      await setCreatedAt(raw, [paused], hoursAgo(dialect, 240));
      const before = await threadView(saver, paused);
      const newest = newestPerNamespace(before);
      expect(newest.size).toBe(2);
      const twinRows = await dumpTables(raw, [twin]);

      const { count } = await expire(saver, { idleSince: idleSince(120), strategy: "keep_latest" });

      expect(count).toBe(1);
      expect(await dumpTables(raw, [activeChild])).toEqual(activeRows);
      expect(await dumpTables(raw, [twin])).toEqual(twinRows);
      expect(await storedCheckpoints(raw, paused)).toEqual(
        [...newest].sort().map(([ns, id]) => ({ ns, id, parent: null })),
      );
      expect(await integrity(raw)).toEqual(CLEAN);
      const resumed = await graph.invoke(new Command({ resume: "9D" }), threadConfig(paused));
      expect(normalize(resumed)).toEqual(
        normalize(await graph.invoke(new Command({ resume: "9D" }), threadConfig(twin))),
      );
      expect(normalize(resumed)).toMatchObject({
        booking: ["quote for Lima", "seat 9D confirmed", "ticket #2 issued"],
      });
    });
  });

  it("idle means strictly before idleSince, to the millisecond", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      const thread = newThreadId("exp-edge");
      await new HistoryWriter(saver, thread).chain(2);
      const at = Math.floor((Date.now() - 240 * HOUR) / 1000) * 1000 + 123;
      await setCreatedAt(raw, [thread], atMillis(dialect), { params: [at] });
      const rows = await dumpTables(raw, [thread]);

      expect(await expire(saver, { idleSince: new Date(at) })).toEqual({ count: 0, progress: [] });
      expect(await dumpTables(raw, [thread])).toEqual(rows);
      expect(await expire(saver, { idleSince: new Date(at + 1) })).toEqual({ count: 1, progress: [1] });
      expect(await storedThreads(raw)).toEqual([]);
    });
  });

  it("expires threads whose ids differ only in case or trailing spaces independently", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      const base = newThreadId("Exp-Exact");
      const idle = [base, `${base} `, `${base}  `];
      const active = [base.toLowerCase(), base.toUpperCase()];
      for (const id of [...idle, ...active]) await new HistoryWriter(saver, id).chain(2, { label: id });
      await setCreatedAt(raw, idle, hoursAgo(dialect, 240));
      // Five threads, each with its own rows.
      expect(await storedThreads(raw)).toEqual([...idle, ...active].sort());
      for (const id of [...idle, ...active]) expect((await storedCheckpoints(raw, id)).length).toBe(2);

      expect(await expire(saver, { idleSince: idleSince(120) })).toEqual({ count: 3, progress: [3] });
      expect(await storedThreads(raw)).toEqual([...active].sort());
      expect(await integrity(raw)).toEqual(CLEAN);
    });
  });

  it("an empty database, or one with nothing idle, reports 0 and no progress; bad options are refused", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      expect(await expire(saver, { idleSince: new Date() })).toEqual({ count: 0, progress: [] });
      const thread = newThreadId("exp-none");
      await new HistoryWriter(saver, thread).chain(2);
      const everything = await dumpTables(raw);
      expect(await expire(saver, { idleSince: idleSince(1) })).toEqual({ count: 0, progress: [] });
      expect(await expire(saver, { idleSince: idleSince(1), strategy: "keep_latest" })).toEqual({
        count: 0,
        progress: [],
      });

      await setCreatedAt(raw, [thread], hoursAgo(dialect, 240));
      const aged = await dumpTables(raw);
      expect(aged).not.toEqual(everything);
      await expect(saver.expireThreads({ idleSince: new Date(Number.NaN) })).rejects.toThrow(InvalidInputError);
      await expect(saver.expireThreads({ idleSince: "yesterday" as unknown as Date })).rejects.toThrow(
        InvalidInputError,
      );
      await expect(saver.expireThreads({ idleSince: new Date(), batchSize: 0 })).rejects.toThrow(InvalidInputError);
      await expect(saver.expireThreads({ idleSince: new Date(), batchSize: 1.5 })).rejects.toThrow(InvalidInputError);
      await expect(
        saver.expireThreads({ idleSince: new Date(), strategy: "bogus" as string as PruneStrategy }),
      ).rejects.toThrow(InvalidInputError);
      expect(await dumpTables(raw)).toEqual(aged);
    });
  });

  it("a dry run counts and names the threads a run expires, leaves pinned ones out, and changes nothing", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      const [old, pinned, fresh] = ["exp-dry-old", "exp-dry-pinned", "exp-dry-fresh"].map(newThreadId);
      for (const id of [old, pinned, fresh]) await new HistoryWriter(saver, id).chain(2);
      await setCreatedAt(raw, [old, pinned], hoursAgo(dialect, 240));
      await saver.pinThread(pinned);
      const everything = await dumpTables(raw);

      const named: string[] = [];
      const count = await saver.expireThreads({
        idleSince: idleSince(120),
        dryRun: true,
        onThread: (threadId) => named.push(threadId),
      });
      expect({ count, named }).toEqual({ count: 1, named: [old] });
      expect(await saver.expireThreads({ idleSince: idleSince(120), dryRun: true })).toBe(1);
      expect(await dumpTables(raw)).toEqual(everything);

      expect(await expire(saver, { idleSince: idleSince(120) })).toEqual({ count: 1, progress: [1] });
      expect(await storedThreads(raw)).toEqual([fresh, pinned].sort());
    });
  });

  it("expires exactly the idle threads among 2000 of mixed ages, in batches, with keep_latest and then delete", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      const { threads, idle, active, newestOf, templateView } = await seedRetention(saver, raw, 2000);
      expect(idle.length).toBe(500);
      const before = byThread(await dumpTables(raw));
      expect(await integrity(raw)).toEqual(CLEAN);

      // A dry run names exactly the threads the run below handles, and changes nothing.
      const named: string[] = [];
      const wouldExpire = await saver.expireThreads({
        idleSince: idleSince(120),
        batchSize: 64,
        dryRun: true,
        onThread: (threadId) => named.push(threadId),
      });
      expect(wouldExpire).toBe(idle.length);
      expect(named.sort()).toEqual(idle);
      expect(byThread(await dumpTables(raw))).toEqual(before);

      // keep_latest: each idle thread keeps the newest checkpoint of each namespace.
      const kept = await expire(saver, { idleSince: idleSince(120), strategy: "keep_latest", batchSize: 64 });
      expect(kept.count).toBe(idle.length);
      expectProgress(kept.progress, idle.length, 64);
      const keptRows = await dumpTables(raw);
      const afterKeep = byThread(keptRows);
      expect([...afterKeep.keys()].sort()).toEqual(threads);
      for (const id of active) expect(afterKeep.get(id)).toEqual(before.get(id));
      const idleSet = new Set(idle);
      const checkpoints = await raw.query(
        "select thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id from checkpoints",
      );
      const actual = checkpoints
        .filter((row) => idleSet.has(String(row.thread_id)))
        .map((row) => [row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id].join("|"))
        .sort();
      const expected = idle
        .flatMap((id) => [...newestOf(id)].map(([ns, checkpointId]) => [id, ns, checkpointId, ""].join("|")))
        .sort();
      expect(actual).toEqual(expected);
      expect(await integrity(raw)).toEqual(CLEAN);
      // What is kept still loads: the template's newest checkpoints, without parents.
      for (const id of idle.slice(0, 2)) {
        const newest = newestOf(id);
        expect(await threadView(saver, id)).toEqual(
          (await templateView(id))
            .filter((tuple) => newest.get(tuple.ns) === tuple.id)
            .map((tuple) => ({ ...tuple, parent: null })),
        );
      }

      // A second keep_latest finds the same idle threads and changes nothing.
      await expire(saver, { idleSince: idleSince(120), strategy: "keep_latest", batchSize: 500 });
      expect(await dumpTables(raw)).toEqual(keptRows);

      // delete (the default strategy and batch size): the idle threads go entirely.
      const deleted = await expire(saver, { idleSince: idleSince(120) });
      expect(deleted.count).toBe(idle.length);
      expectProgress(deleted.progress, idle.length, 100);
      expect(await storedThreads(raw)).toEqual([...active].sort());
      const deletedRows = await dumpTables(raw);
      const afterDelete = byThread(deletedRows);
      for (const id of active) expect(afterDelete.get(id)).toEqual(before.get(id));
      expect(await integrity(raw)).toEqual(CLEAN);

      // Nothing is idle any more.
      expect(await expire(saver, { idleSince: idleSince(120) })).toEqual({ count: 0, progress: [] });
      expect(await dumpTables(raw)).toEqual(deletedRows);
    });
  }, 240_000);
});

/**
 * `count` threads copied in bulk from two templates written through the saver (one
 * with a subgraph namespace), aged with SQL, one in eight of each kind: idle (10
 * days); old but with a recent newest checkpoint (active); older still with a newest
 * of 6 days (idle); the others fresh. The templates stay, fresh.
 */
async function seedRetention(saver: DrizzleSaver, raw: RawDatabase, count: number) {
  const dialect = raw.dialect;
  const templates = [newThreadId("tpl-plain"), newThreadId("tpl-nested")];
  const plain = new HistoryWriter(saver, templates[0]);
  const p1 = await plain.put({
    values: { topic: "a", big: "z".repeat(200) },
    writes: [{ taskId: "t", writes: [["x", 1]] }],
  });
  await plain.put({ parent: p1, values: { topic: "b" }, writes: [{ taskId: "t", writes: [["x", 2]] }] });
  const nested = new HistoryWriter(saver, templates[1]);
  const n1 = await nested.put({ values: { topic: "a" } });
  await nested.put({ parent: n1, values: { topic: "b" }, writes: [{ taskId: "t", writes: [["x", 1]] }] });
  const child = `child:${uuid6(-1)}`;
  const s1 = await nested.put({ ns: child, values: { inner: 1 }, writes: [{ taskId: "s", writes: [["y", 1]] }] });
  await nested.put({ ns: child, parent: s1, values: { inner: 2 }, writes: [{ taskId: "s", writes: [["y", 2]] }] });

  const layouts = await Promise.all(templates.map((id) => storedCheckpoints(raw, id)));
  const newestIds = layouts.map((layout) => [...layout].sort((x, y) => (x.id < y.id ? -1 : 1)).at(-1)?.id ?? "");
  const threads: string[][] = [[], []];
  const kinds: string[][] = [[], [], [], []];
  const kindOf = (i: number) => (i % 8 < 4 ? i % 8 : 0);
  const templateOf = new Map<string, number>();
  for (let i = 0; i < count; i += 1) {
    const id = `ret-${String(i).padStart(5, "0")}-${i % 2 === 0 ? "p" : "n"}`;
    threads[i % 2].push(id);
    kinds[kindOf(i)].push(id);
    templateOf.set(id, i % 2);
  }
  for (const [t, template] of templates.entries()) await cloneThread(raw, template, threads[t]);

  await setCreatedAt(raw, kinds[1], hoursAgo(dialect, 240));
  await setCreatedAt(raw, kinds[2], hoursAgo(dialect, 240));
  await setCreatedAt(raw, kinds[3], hoursAgo(dialect, 480));
  for (const [t, newest] of newestIds.entries()) {
    const of = (kind: string[]) => kind.filter((id) => templateOf.get(id) === t);
    await setCreatedAt(raw, of(kinds[2]), hoursAgo(dialect, 1), { checkpointIds: [newest] });
    await setCreatedAt(raw, of(kinds[3]), hoursAgo(dialect, 144), { checkpointIds: [newest] });
  }
  const idle = [...kinds[1], ...kinds[3]].sort();
  const active = [...kinds[0], ...kinds[2], ...templates].sort();
  const newestPerTemplate = layouts.map((layout) => newestPerNamespace(layout));
  return {
    threads: [...idle, ...active].sort(),
    idle,
    active,
    newestOf: (id: string) => newestPerTemplate[templateOf.get(id) ?? 0],
    templateView: (id: string) => threadView(saver, templates[templateOf.get(id) ?? 0]),
  };
}
