/**
 * expireThreads beside a transaction holding one idle thread's row (a put in progress,
 * or another process expiring that thread): it leaves that thread to the holder and
 * expires the others at once, instead of waiting for the lock. Waiting made several
 * expiring processes walk the threads in lockstep, each queued behind the others' locks
 * (the sweep-race expire test ran past its 60 s under load on MariaDB).
 */
import { type Checkpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { freshSaver } from "../helpers/databases.js";
import { holdThreadRow } from "../helpers/locks.js";
import { openRaw } from "../lifecycle/support.js";
import { ageThreads } from "./support.js";

describe.each(["postgres", "mysql"] as const)("expireThreads beside a held thread row on %s", (dialect) => {
  it("expires the other idle threads without waiting, and leaves the held one to its holder", async () => {
    const { saver, url } = await freshSaver(dialect);
    const raw = await openRaw(dialect, url);
    const threads = ["idle-a", "idle-b", "idle-held", "idle-c"];
    try {
      for (const threadId of threads) {
        const checkpoint: Checkpoint = {
          v: 4,
          id: uuid6(-1),
          ts: new Date().toISOString(),
          channel_values: { count: 1 },
          channel_versions: { count: 1 },
          versions_seen: {},
        };
        await saver.put(
          { configurable: { thread_id: threadId, checkpoint_ns: "" } },
          checkpoint,
          {
            source: "loop",
            step: 0,
            parents: {},
          },
          { count: 1 },
        );
      }
      await ageThreads(raw, threads, 2);
      const release = await holdThreadRow(dialect, url, "idle-held");
      let expired: number;
      try {
        // Waiting for the holder would outlast this: InnoDB waits 50 s for a row lock, PostgreSQL forever.
        const timeout = new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error("expireThreads waited for the held row")), 15_000),
        );
        expired = await Promise.race([saver.expireThreads({ idleSince: new Date(Date.now() - 3_600_000) }), timeout]);
      } finally {
        await release();
      }
      expect(expired).toBe(3);
      const left = await raw.query("select thread_id from checkpoint_threads order by thread_id");
      expect(left.map((row) => String(row.thread_id))).toEqual(["idle-held"]);
      // Once released, the next pass expires it too.
      expect(await saver.expireThreads({ idleSince: new Date(Date.now() - 3_600_000) })).toBe(1);
    } finally {
      await raw.close();
      await saver.close();
    }
  });
});
