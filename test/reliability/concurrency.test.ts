import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type CheckpointTuple, uuid6 } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, type UrlDriver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import {
  type Child,
  channelValue,
  checkpointOf,
  expectCleanExit,
  type Message,
  report,
  SOAK,
  startChild,
  WORKERS,
} from "./helpers.js";
import type { WriterArgs } from "./workers/writer.js";

/**
 * Several processes write checkpoints and pending writes at once, to threads of
 * their own and to threads they share, while reading. Afterwards every
 * acknowledged call must be readable exactly, retried writes must keep their
 * first value, and every history must be a valid parent chain.
 * (setup() from several processes at once is test/migrations/setup.test.ts.)
 */

const PROCESSES = SOAK ? 8 : 4;
const STEPS = SOAK ? 120 : 10;
const CHANNELS = 3;
const SIZE = SOAK ? 8192 : 2048;

interface Expected {
  puts: Message[];
  writes: Map<string, [string, string, unknown][]>;
}

const key = (threadId: unknown, ns: unknown, id: unknown) => JSON.stringify([threadId, ns, id]);

/** What the children acknowledged, as the state the database must now hold. */
function expectedFrom(children: Child[]): Expected {
  const messages = children.flatMap((child) => child.messages);
  const puts = messages.filter((m) => m.kind === "put");
  const writes = new Map<string, [string, string, unknown][]>();
  const add = (m: Message, write: [string, string, unknown]) => {
    const k = key(m.threadId, m.ns, m.checkpointId);
    writes.set(k, [...(writes.get(k) ?? []), write]);
  };
  for (const m of messages) {
    // The first attempt of a regular write is what stays; a retry changes nothing.
    if (m.kind !== "writes") continue;
    for (const [idx, seed] of (m.seeds as string[]).entries()) add(m, [m.taskId as string, `ch${idx}`, seed]);
  }
  for (const m of messages) {
    // The last attempt of a special write replaces the earlier ones.
    if (m.kind === "special" && m.attempt === 2) add(m, [m.taskId as string, "__error__", { message: m.seed }]);
  }
  return { puts, writes };
}

const sortWrites = (writes: readonly (readonly [string, string, unknown])[]) =>
  [...writes].map((w) => JSON.stringify(w)).sort();

async function collect(saver: DrizzleSaver, threadId: string, ns: string): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: ns } }))
    tuples.push(tuple);
  return tuples;
}

/** Checks every acknowledged put and write, and the parent chains; returns what it checked. */
async function verify(saver: DrizzleSaver, children: Child[]) {
  const { puts, writes } = expectedFrom(children);
  const problems: string[] = [];
  for (const put of puts) {
    const config = {
      configurable: { thread_id: put.threadId, checkpoint_ns: put.ns, checkpoint_id: put.checkpointId },
    };
    const tuple = await saver.getTuple(config);
    const where = `${put.threadId}/${put.ns}/${put.checkpointId}`;
    if (!tuple) {
      problems.push(`acknowledged checkpoint ${where} is missing`);
      continue;
    }
    const values = Object.fromEntries(
      Object.entries(put.seeds as Record<string, string>).map(([channel, seed]) => [channel, channelValue(seed, SIZE)]),
    );
    if (JSON.stringify(tuple.checkpoint.channel_values) !== JSON.stringify(values)) {
      problems.push(`${where}: channel values differ (${Object.keys(tuple.checkpoint.channel_values)})`);
    }
    if (JSON.stringify(tuple.checkpoint.channel_versions) !== JSON.stringify(put.versions)) {
      problems.push(`${where}: channel versions differ`);
    }
    if (tuple.metadata?.step !== put.step) problems.push(`${where}: metadata differs`);
    if ((tuple.parentConfig?.configurable?.checkpoint_id ?? null) !== put.parentId) {
      problems.push(`${where}: parent ${tuple.parentConfig?.configurable?.checkpoint_id} instead of ${put.parentId}`);
    }
    const expectedWrites = writes.get(key(put.threadId, put.ns, put.checkpointId)) ?? [];
    if (JSON.stringify(sortWrites(tuple.pendingWrites ?? [])) !== JSON.stringify(sortWrites(expectedWrites))) {
      problems.push(
        `${where}: pending writes ${JSON.stringify(tuple.pendingWrites)} != ${JSON.stringify(expectedWrites)}`,
      );
    }
  }

  // Histories: per (thread, namespace), exactly the acknowledged checkpoints, each parent present and older,
  // and each writer's own chain intact from its last checkpoint back to its first.
  const chains = new Map<string, Message[]>();
  for (const put of puts) {
    const k = JSON.stringify([put.threadId, put.ns]);
    chains.set(k, [...(chains.get(k) ?? []), put]);
  }
  for (const [k, acked] of chains) {
    const [threadId, ns] = JSON.parse(k) as [string, string];
    const tuples = await collect(saver, threadId, ns);
    const byId = new Map(tuples.map((t) => [t.checkpoint.id, t]));
    if (tuples.length !== acked.length)
      problems.push(`${k}: ${tuples.length} checkpoints listed, ${acked.length} acknowledged`);
    for (const tuple of tuples) {
      const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
      if (parent !== undefined && !(byId.has(parent) && parent < tuple.checkpoint.id)) {
        problems.push(`${k}: ${tuple.checkpoint.id} has a missing or newer parent ${parent}`);
      }
    }
    const byWriter = new Map<string, string[]>();
    for (const put of acked) {
      const writer = String((put.seeds as Record<string, string>).ch0)
        .split("|")
        .slice(0, 2)
        .join("|");
      byWriter.set(writer, [...(byWriter.get(writer) ?? []), put.checkpointId as string]);
    }
    for (const [writer, ids] of byWriter) {
      const walked: string[] = [];
      let id: string | undefined = ids[ids.length - 1];
      while (id !== undefined && walked.length <= ids.length) {
        walked.unshift(id);
        id = byId.get(id)?.parentConfig?.configurable?.checkpoint_id as string | undefined;
      }
      if (JSON.stringify(walked) !== JSON.stringify(ids)) problems.push(`${k}: chain of ${writer} is broken`);
    }
  }
  return { problems, checkpoints: puts.length, chains: chains.size, writeSets: writes.size };
}

function writerArgs(url: string, proc: number, overrides: Partial<WriterArgs> = {}): WriterArgs {
  return {
    url,
    proc,
    steps: STEPS,
    size: SIZE,
    channels: CHANNELS,
    chains: [
      { threadId: `own-${proc}`, ns: "" },
      { threadId: "shared", ns: "" },
      { threadId: "shared", ns: `sub:${proc % 2}` },
    ],
    barrier: true,
    openAfterBarrier: false,
    ...overrides,
  };
}

/** Starts the writers, releases them together, and waits for all of them. */
async function runWriters(argsList: WriterArgs[]): Promise<Child[]> {
  const children = argsList.map((args) => startChild(`${WORKERS}/writer.ts`, args));
  await Promise.all(children.map((child) => child.waitFor((m) => m.kind === "ready", "ready")));
  for (const child of children) child.send("go");
  await Promise.all(children.map(expectCleanExit));
  return children;
}

function totals(children: Child[]) {
  const done = children.map((child) => child.messages.find((m) => m.kind === "done"));
  return {
    puts: done.reduce((sum, m) => sum + Number(m?.puts ?? 0), 0),
    putWritesCalls: done.reduce((sum, m) => sum + Number(m?.writeCalls ?? 0), 0),
    reads: done.reduce((sum, m) => sum + Number(m?.reads ?? 0), 0),
  };
}

/** Each dialect through fromUrl's default driver, and the other drivers fromUrl can open. */
const TARGETS: [string, DialectName, UrlDriver | undefined][] = [
  ...DIALECTS.map((dialect): [string, DialectName, undefined] => [dialect, dialect, undefined]),
  ["pg", "postgres", "pg"],
  ["libsql", "sqlite", "libsql"],
];

describe.each(TARGETS)("concurrent processes on %s", (target, dialect, driver) => {
  it(
    `${PROCESSES} processes writing own and shared threads lose nothing and keep valid chains`,
    async () => {
      const { saver, url } = await freshSaver(dialect);
      try {
        // The checkpoint whose task every process writes at once.
        const shared = await saver.put(
          { configurable: { thread_id: "shared-task", checkpoint_ns: "" } },
          checkpointOf(uuid6(-1), {}, {}),
          { source: "input", step: -1, parents: {} },
          {},
        );
        const sharedTask = {
          threadId: "shared-task",
          ns: "",
          checkpointId: shared.configurable?.checkpoint_id as string,
        };
        const children = await runWriters(
          Array.from({ length: PROCESSES }, (_, proc) => writerArgs(url, proc, { sharedTask, driver })),
        );
        const { problems, checkpoints, chains, writeSets } = await verify(saver, children);

        // Racing writes of one task: each task holds the complete write set of exactly one process.
        const racing = (await saver.getTuple({ configurable: { ...sharedTask, thread_id: "shared-task" } }))
          ?.pendingWrites;
        const acked = children.flatMap((child) => child.messages.filter((m) => m.kind === "shared"));
        for (let step = 0; step < STEPS; step++) {
          const taskId = `shared-s${step}`;
          const stored = (racing ?? []).filter(([task]) => task === taskId).map(([, , value]) => value);
          const candidates = acked.filter((m) => m.taskId === taskId).map((m) => m.seeds);
          if (!candidates.some((seeds) => JSON.stringify(seeds) === JSON.stringify(stored))) {
            problems.push(`${taskId}: stored ${JSON.stringify(stored)} is not one writer's set`);
          }
        }
        expect(problems).toEqual([]);
        expect(acked).toHaveLength(PROCESSES * STEPS);
        report("concurrent writers", dialect, {
          driver: target,
          processes: PROCESSES,
          ...totals(children),
          sharedTaskRaces: STEPS,
          checkpointsVerified: checkpoints,
          chainsVerified: chains,
          writeSetsVerified: writeSets,
          errors: 0,
          lost: problems.length,
        });
      } finally {
        await saver.close();
      }
    },
    SOAK ? 1_800_000 : 240_000,
  );
});

describe("a brand-new SQLite file opened by several processes at once", () => {
  it("fromUrl waits for another connection's write lock while it switches a new file to WAL", async () => {
    // The switch upgrades a read lock to a write lock, where SQLite never calls the busy handler:
    // under load, a process opening the file while another one switched or wrote it failed at once.
    const dir = mkdtempSync(join(tmpdir(), "lgcd-rel-"));
    const path = join(dir, "locked.db");
    const holder = new Database(path);
    try {
      holder.exec("begin immediate; create table app (x integer)");
      const released = new Promise<void>((resolve) =>
        setTimeout(() => {
          holder.exec("commit");
          resolve();
        }, 300),
      );
      const saver = await DrizzleSaver.fromUrl(path);
      try {
        await released;
        await saver.setup();
        const reader = new Database(path, { readonly: true });
        expect(reader.pragma("journal_mode", { simple: true })).toBe("wal");
        reader.close();
      } finally {
        await saver.close();
      }
    } finally {
      holder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(
    `${PROCESSES} processes open, migrate and write the same new file with no "database is locked"`,
    async () => {
      // No file yet: every process runs fromUrl (which switches the file to WAL) and setup() at the same instant.
      const path = join(mkdtempSync(join(tmpdir(), "lgcd-rel-")), "fresh.db");
      const rounds = SOAK ? 10 : 2;
      let puts = 0;
      let calls = 0;
      for (let round = 0; round < rounds; round++) {
        const file = `${path}.${round}`;
        const children = await runWriters(
          Array.from({ length: PROCESSES }, (_, proc) =>
            writerArgs(file, proc, { openAfterBarrier: true, steps: 4, chains: [{ threadId: "shared", ns: "" }] }),
          ),
        );
        const saver = await DrizzleSaver.fromUrl(file);
        try {
          const { problems } = await verify(saver, children);
          expect(problems).toEqual([]);
        } finally {
          await saver.close();
        }
        puts += totals(children).puts;
        calls += totals(children).putWritesCalls;
      }
      rmSync(dirname(path), { recursive: true, force: true });
      report("fresh SQLite file opened at once", "sqlite", {
        rounds,
        processes: PROCESSES,
        puts,
        putWritesCalls: calls,
        errors: 0,
        lost: 0,
      });
    },
    SOAK ? 1_800_000 : 240_000,
  );
});
