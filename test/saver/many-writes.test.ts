import { emptyCheckpoint, type PendingWrite, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";

/**
 * A checkpoint with very many pending writes (a large fan-out makes one): reading it
 * must take time linear in the writes. Assembling them used to copy a checkpoint's
 * write list on every row added to it (85 s for 100,000 writes, the event loop
 * blocked all along); now getTuple and list finish within the ordinary test timeout.
 * No time is asserted: a quadratic read of this many writes runs past the timeout.
 */

const WRITES: Record<DialectName, number> = { sqlite: 100_000, postgres: 20_000, mysql: 20_000 };
/** Writes per putWrites call (one task each), within every driver's parameter limit. */
const PER_TASK = 1_000;

describe.each(DIALECTS)("a checkpoint with many pending writes on %s", (dialect) => {
  let saver: DrizzleSaver;
  const total = WRITES[dialect];
  const config = { configurable: { thread_id: "fan-out", checkpoint_ns: "" } };
  let checkpointId = "";

  beforeAll(async () => {
    ({ saver } = await freshSaver(dialect));
    checkpointId = uuid6(-1);
    const stored = await saver.put(
      config,
      { ...emptyCheckpoint(), id: checkpointId },
      { source: "loop", step: 1, parents: {} },
      {},
    );
    // Task ids in reverse order of writing, so the read has to sort them.
    for (let task = total / PER_TASK - 1; task >= 0; task--) {
      const writes: PendingWrite[] = Array.from({ length: PER_TASK }, (_, i) => ["results", task * PER_TASK + i]);
      await saver.putWrites(stored, writes, `task-${String(task).padStart(4, "0")}`);
    }
  }, 300_000);
  afterAll(async () => {
    await saver?.close();
  });

  it("getTuple returns every write, in task and index order", async () => {
    const tuple = await saver.getTuple({ configurable: { ...config.configurable, checkpoint_id: checkpointId } });
    const writes = tuple?.pendingWrites ?? [];
    expect(writes).toHaveLength(total);
    expect(writes.map(([, , value]) => value)).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(writes[0]).toEqual(["task-0000", "results", 0]);
  });

  it("list returns the same writes with the checkpoint", async () => {
    const tuples = [];
    for await (const tuple of saver.list(config, { limit: 1 })) tuples.push(tuple);
    expect(tuples).toHaveLength(1);
    expect(tuples[0].pendingWrites).toHaveLength(total);
  });
});
