import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { CLEAN, integrity, openRaw } from "../lifecycle/support.js";
import { ChainWriter, writeValue } from "../reliability/chain.js";
import { type Child, channelValue, expectCleanExit, type Message } from "../reliability/helpers.js";
import { ageThreads, chainSpecs, checkpointIds, startSweepers } from "./support.js";

/**
 * keep_latest sweepers in several processes while writers resume idle threads: a
 * pruned thread keeps its newest checkpoints whole (values, blobs, writes), a resumed
 * thread loses none of what it wrote since, and no blob or write is left orphaned.
 */
const SWEEPERS = 3;
const IDLE = 20;
const CONTESTED = 20;
const KEEP_LAST = 2;
// Far beyond the writing window (a pass still running when it ends must not find a resumed thread idle).
const IDLE_FOR_MS = 6000;
const WRITE_MS = 1500;

describe.each(DIALECTS)("keep_latest sweepers in several processes racing writers on %s", (dialect: DialectName) => {
  it("keep the newest checkpoints whole and every write made since", async () => {
    const { saver, url } = await freshSaver(dialect);
    const raw = await openRaw(dialect, url);
    try {
      const specs = chainSpecs({ idle: IDLE, contested: CONTESTED });
      const events = specs.map(() => [] as Message[]);
      const writers = specs.map((s, w) => new ChainWriter(saver, s, (m) => events[w].push(m)));
      for (const writer of writers) for (let step = 0; step < 4; step++) await writer.next();
      await ageThreads(
        raw,
        specs.map((s) => s.threadId),
        1,
      );
      const children: Child[] = startSweepers(SWEEPERS, {
        url,
        idleForMs: IDLE_FOR_MS,
        durationMs: WRITE_MS,
        strategy: "keep_latest",
        keepLast: KEEP_LAST,
      });
      for (const child of children) await child.waitFor((m) => m.kind === "ready", "ready");
      for (const child of children) child.send("go");
      const end = Date.now() + WRITE_MS;
      await Promise.all(
        specs.map(async (s, w) => {
          if (s.threadId.startsWith("idle")) return;
          while (Date.now() < end) {
            await writers[w].next();
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
        }),
      );
      for (const child of children) await expectCleanExit(child);
      const turns = children.flatMap((child) => child.messages.filter((m) => m.kind === "thread"));

      expect(await integrity(raw)).toEqual(CLEAN);
      const problems: string[] = [];
      for (const [w, s] of specs.entries()) {
        const stored = (await checkpointIds(raw, s.threadId)).get("") ?? [];
        const puts = events[w].filter((m) => m.kind === "put").map((m) => m.checkpointId as string);
        if (s.threadId.startsWith("idle")) {
          if (stored.join() !== puts.slice(-KEEP_LAST).join()) problems.push(`${s.threadId}: kept ${stored}`);
          continue;
        }
        // Everything written after the first resumed put (which made the thread active) is there.
        const resumed = puts.slice(4);
        for (const id of resumed.slice(1)) if (!stored.includes(id)) problems.push(`${s.threadId}: lost ${id}`);
        const newest = events[w].filter((m) => m.kind === "intent").at(-1);
        const tuple = await saver.getTuple({ configurable: { thread_id: s.threadId, checkpoint_ns: "" } });
        const seeds = newest?.seeds as Record<string, string>;
        const values = Object.fromEntries(Object.entries(seeds).map(([c, seed]) => [c, channelValue(seed, s.size)]));
        if (tuple?.checkpoint.id !== newest?.checkpointId) problems.push(`${s.threadId}: newest is not the last put`);
        else if (JSON.stringify(tuple?.checkpoint.channel_values) !== JSON.stringify(values)) {
          problems.push(`${s.threadId}: newest checkpoint incomplete`);
        }
        const taskId = events[w].filter((m) => m.kind === "writes").at(-1)?.taskId as string;
        const expected = [0, 1, 2].map((idx) => [taskId, `ch${idx}`, writeValue(`${taskId}|${idx}`, s.size)]);
        if (JSON.stringify(tuple?.pendingWrites) !== JSON.stringify(expected)) {
          problems.push(`${s.threadId}: newest checkpoint's writes differ`);
        }
      }
      expect(problems).toEqual([]);
      expect(turns.filter((m) => m.outcome === "pruned").length).toBeGreaterThanOrEqual(IDLE);
      console.log(
        `${dialect}: ${turns.length} thread turns, ${turns.filter((m) => m.outcome === "pruned").length} pruned, ` +
          `${turns.filter((m) => m.outcome === "skipped").length} skipped`,
      );
    } finally {
      await raw.close();
      await saver.close();
    }
  }, 60_000);
});
