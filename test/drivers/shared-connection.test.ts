/**
 * Several users of one connection: an application that hands its one node-postgres
 * `Client`, mysql2 `Connection` or in-memory SQLite database to two savers, or to a saver and a store, or to an
 * import. A transaction on such a connection holds it: every other statement must wait
 * for its end, or it runs inside it (rolled back with it) and a second transaction fails
 * to begin. Before, each saver, store and import kept its own gate, so their
 * transactions mixed: "current transaction is aborted", "Transaction characteristics
 * can't be changed while a transaction is in progress"; and node-postgres warned that
 * a query was sent while another ran.
 */
import { uuid6 } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore, MissingParentError } from "../../src/index.js";
import { type OpenDatabase, openFresh } from "../helpers/drivers.js";
import { checkpointOf } from "../reliability/helpers.js";

const ROUNDS = 80;

/** A graph's steps on `threads` threads, with prunes and deletions of its own threads between them. */
async function steps(saver: DrizzleSaver, prefix: string): Promise<Map<string, string>> {
  const latest = new Map<string, string>();
  for (let round = 0; round < ROUNDS; round++) {
    const thread_id = `${prefix}-${round % 3}`;
    const parent = latest.get(thread_id);
    const id = uuid6(round);
    const config = await saver.put(
      { configurable: { thread_id, checkpoint_ns: "", ...(parent && { checkpoint_id: parent }) } },
      checkpointOf(id, { n: round }, { n: round + 1 }),
      { source: "loop", step: round, parents: {} },
      { n: round + 1 },
    );
    await saver.putWrites(config, [["n", round]], `task-${round}`);
    latest.set(thread_id, id);
    if (round % 4 === 3) await saver.prune([thread_id], { strategy: "keep_latest", keepLast: 1 });
    if (round % 5 === 4) {
      await saver.deleteThread(thread_id);
      latest.delete(thread_id);
    }
  }
  return latest;
}

/** One connection: a driver's own, or an in-memory SQLite database (one connection is the whole database). */
async function openOne(driver: "pg-client" | "mysql2-connection" | "in-memory better-sqlite3"): Promise<OpenDatabase> {
  if (driver !== "in-memory better-sqlite3") return openFresh(driver);
  const sqlite = new Database(":memory:");
  return {
    db: drizzle(sqlite),
    another: () => Promise.reject(new Error("one connection only")),
    close: async () => {
      sqlite.close();
    },
  };
}

describe.each(["pg-client", "mysql2-connection", "in-memory better-sqlite3"] as const)(
  "one %s shared by two savers and a store",
  (driver) => {
    it("their transactions never mix: every call succeeds, and every write stays", async () => {
      const warnings: string[] = [];
      const onWarning = (warning: Error) => warnings.push(warning.message);
      process.on("warning", onWarning);
      const database = await openOne(driver);
      const first = new DrizzleSaver(database.db);
      const second = new DrizzleSaver(database.db);
      const store = new DrizzleStore(database.db);
      try {
        await first.setup();
        await store.setup();
        const writes = async () => {
          for (let round = 0; round < ROUNDS; round++) {
            await store.batch([
              { namespace: ["notes"], key: `k${round % 5}`, value: { round } },
              { namespace: ["notes"], key: `k${(round + 1) % 5}`, value: { round } },
            ]);
          }
        };
        // A call that fails by design: its failure must not reach the others' transactions.
        const refused = async () => {
          for (let round = 0; round < ROUNDS; round++) {
            const thread_id = `gone-${round}`;
            const config = await second.put(
              { configurable: { thread_id, checkpoint_ns: "" } },
              checkpointOf(uuid6(round), { n: round }, { n: 1 }),
              { source: "loop", step: 0, parents: {} },
              { n: 1 },
            );
            await second.deleteThread(thread_id);
            await expect(second.putWrites(config, [["n", round]], "task")).rejects.toBeInstanceOf(MissingParentError);
          }
        };
        const [a, b] = await Promise.all([steps(first, "a"), steps(second, "b"), writes(), refused()]);
        for (const [saver, latest] of [
          [second, a],
          [first, b],
        ] as const) {
          for (const [thread_id, id] of latest) {
            const tuple = await saver.getTuple({ configurable: { thread_id } });
            expect(tuple?.checkpoint.id).toBe(id);
            expect(tuple?.pendingWrites).toHaveLength(1);
          }
        }
        expect((await store.search(["notes"])).length).toBe(5);
        // node-postgres deprecates a query sent while another runs: statements take turns.
        expect(warnings).toEqual([]);
      } finally {
        process.off("warning", onWarning);
        await database.close();
      }
    }, 120_000);
  },
);
