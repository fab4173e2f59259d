import { HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { BaseCheckpointSaver, type Checkpoint, MemorySaver, uuid6 } from "@langchain/langgraph-checkpoint";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver, SerializationError } from "../../src/index.js";
import { buildChatGraph, CHAT_TURNS, newThread, normalHistory } from "../graphs/graphs.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { EXTRA_DRIVERS, type ExtraDriver, freshDriverSaver } from "../helpers/drivers.js";
import { CLEAN, integrity, newThreadId, openRaw, type RawDatabase } from "./support.js";

/**
 * Random histories of a growing message list (appends, replaced and removed messages,
 * forks from old checkpoints, a second process with a cold cache) and every lifecycle
 * operation between them: every checkpoint our saver still has reads back exactly what
 * MemorySaver, which stores every value whole, reads back for it.
 * INCREMENTAL_RUNS raises the number of histories (default 6 per dialect).
 */

interface Message {
  id: string;
  text: string;
}

type Edit =
  | { kind: "append"; count: number }
  | { kind: "replace"; at: number }
  | { kind: "remove"; at: number }
  | { kind: "mutate"; at: number }
  | { kind: "keep" };

type Operation =
  | { kind: "step"; edit: Edit; from: "tip" | number; cold: boolean; run: number }
  | { kind: "prune" }
  | { kind: "deleteForRuns"; run: number }
  | { kind: "copyThread" }
  | { kind: "expireThreads" }
  | { kind: "deleteCopy" };

const edit: fc.Arbitrary<Edit> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("append" as const), count: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("replace" as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("remove" as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("mutate" as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: "keep" as const }) },
);

const operation: fc.Arbitrary<Operation> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant("step" as const),
      edit,
      from: fc.oneof({ weight: 5, arbitrary: fc.constant("tip" as const) }, { weight: 1, arbitrary: fc.nat() }),
      cold: fc.oneof({ weight: 7, arbitrary: fc.constant(false) }, { weight: 3, arbitrary: fc.constant(true) }),
      run: fc.integer({ min: 0, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "prune" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("deleteForRuns" as const), run: fc.integer({ min: 0, max: 2 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "copyThread" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "expireThreads" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "deleteCopy" as const }) },
);

const RUNS = Number(process.env.INCREMENTAL_RUNS ?? 6);

let messageCounter = 0;
const newMessage = (): Message => {
  messageCounter += 1;
  return { id: `m${messageCounter}`, text: `message ${messageCounter} ${"x".repeat(messageCounter % 7)}` };
};

function applyEdit(messages: Message[], change: Edit): Message[] {
  const at = messages.length === 0 ? 0 : ("at" in change ? change.at : 0) % messages.length;
  switch (change.kind) {
    case "append":
      return [...messages, ...Array.from({ length: change.count }, newMessage)];
    case "replace":
      return messages.length === 0 ? [newMessage()] : messages.map((m, i) => (i === at ? newMessage() : m));
    case "remove":
      return messages.filter((_, i) => i !== at);
    case "mutate":
      // A node changing an element it was given in place, and appending (discouraged, but MemorySaver keeps it).
      if (messages.length > 0) messages[at].text += " (edited)";
      return [...messages, newMessage()];
    case "keep":
      return messages;
  }
}

const config = (threadId: string, checkpointId?: string): RunnableConfig => ({
  configurable: { thread_id: threadId, checkpoint_ns: "", ...(checkpointId ? { checkpoint_id: checkpointId } : {}) },
});

/** One history played on our saver and on MemorySaver side by side. */
class History {
  readonly memory = new MemorySaver();
  readonly thread = newThreadId("incremental");
  copy: string | undefined;
  /** What the application holds after its last put: the tip and the array it wrote. */
  tip: { id: string; messages: Message[]; versions: Record<string, string | number> } | undefined;
  /** Ids this history wrote, oldest first. */
  readonly ids: string[] = [];

  constructor(
    private readonly saver: DrizzleSaver,
    private readonly cold: () => Promise<DrizzleSaver>,
  ) {}

  async step(op: Extract<Operation, { kind: "step" }>): Promise<void> {
    let parent = this.tip;
    if (op.from !== "tip" || op.cold || !parent) {
      const remaining = await this.remainingIds(this.saver, this.thread);
      if (remaining.length > 0) {
        const id = op.from === "tip" ? remaining[remaining.length - 1] : remaining[op.from % remaining.length];
        // A fork reads the old checkpoint back, as LangGraph's time travel does.
        const reader = op.cold ? await this.cold() : this.saver;
        const tuple = await reader.getTuple(config(this.thread, id));
        if (!tuple) throw new Error(`checkpoint ${id} vanished`);
        const values = tuple.checkpoint.channel_values;
        parent = {
          id,
          messages: (values.messages as Message[] | undefined) ?? [],
          versions: tuple.checkpoint.channel_versions,
        };
      } else parent = undefined;
    }
    const writer = op.cold ? await this.cold() : this.saver;
    const messages = applyEdit(parent?.messages ?? [], op.edit);
    const version = writer.getNextVersion(parent?.versions.messages as number | undefined);
    const countVersion = writer.getNextVersion(parent?.versions.count as number | undefined);
    const checkpoint: Checkpoint = {
      v: 4,
      id: uuid6(-1),
      ts: new Date().toISOString(),
      channel_values: { messages, count: messages.length },
      channel_versions: { messages: version, count: countVersion },
      versions_seen: {},
    };
    const metadata = { source: "loop" as const, step: this.ids.length, parents: {}, run_id: `run-${op.run}` };
    const newVersions = { messages: version, count: countVersion };
    await writer.put(config(this.thread, parent?.id), checkpoint, metadata, newVersions);
    await this.memory.put(config(this.thread, parent?.id), checkpoint, metadata);
    this.ids.push(checkpoint.id);
    this.tip = { id: checkpoint.id, messages, versions: checkpoint.channel_versions };
  }

  async remainingIds(saver: DrizzleSaver, thread: string): Promise<string[]> {
    const ids: string[] = [];
    for await (const tuple of saver.list(config(thread))) ids.push(tuple.config.configurable?.checkpoint_id);
    return ids.reverse();
  }

  /** Every checkpoint our saver has (both threads, by list and by getTuple) reads what MemorySaver reads. */
  async check(raw: RawDatabase | undefined): Promise<void> {
    const reader = await this.cold();
    for (const thread of [this.thread, this.copy].filter((t): t is string => t !== undefined)) {
      for (const saver of [this.saver, reader]) {
        for await (const tuple of saver.list(config(thread))) {
          const id = tuple.config.configurable?.checkpoint_id as string;
          const expected = await this.memory.getTuple(config(this.thread, id));
          expect(tuple.checkpoint.channel_values, `list of ${thread} at ${id}`).toEqual(
            expected?.checkpoint.channel_values,
          );
          const one = await saver.getTuple(config(thread, id));
          expect(one?.checkpoint.channel_values).toEqual(expected?.checkpoint.channel_values);
        }
      }
    }
    if (raw) expect(await integrity(raw, [this.thread, ...(this.copy ? [this.copy] : [])])).toEqual(CLEAN);
  }
}

/** A second saver on the same data, with a cold cache, as another process would have. */
type OpenCold = () => Promise<{ saver: DrizzleSaver; close(): Promise<void> }>;

async function play(saver: DrizzleSaver, openCold: OpenCold, raw: RawDatabase | undefined, operations: Operation[]) {
  const colds: { close(): Promise<void> }[] = [];
  const cold = async () => {
    const opened = await openCold();
    colds.push(opened);
    return opened.saver;
  };
  const history = new History(saver, cold);
  try {
    for (const op of operations) {
      switch (op.kind) {
        case "step":
          await history.step(op);
          break;
        case "prune":
          await saver.prune([history.thread], { strategy: "keep_latest" });
          break;
        case "deleteForRuns":
          await saver.deleteForRuns([`run-${op.run}`]);
          break;
        case "copyThread":
          if (history.copy) await saver.deleteThread(history.copy);
          history.copy = newThreadId("incremental-copy");
          // A thread with no checkpoints (none written yet, or all removed) is no source: refused, nothing copied.
          if ((await history.remainingIds(saver, history.thread)).length === 0) {
            await expect(saver.copyThread(history.thread, history.copy)).rejects.toThrow(/has no checkpoints/);
            break;
          }
          await saver.copyThread(history.thread, history.copy);
          break;
        case "expireThreads":
          await saver.expireThreads({ idleSince: new Date(Date.now() + 60_000), strategy: "keep_latest" });
          break;
        case "deleteCopy":
          if (history.copy) await saver.deleteThread(history.copy);
          history.copy = undefined;
          break;
      }
      if (op.kind !== "step") history.tip = undefined;
      await history.check(raw);
    }
  } finally {
    for (const fresh of colds) await fresh.close();
  }
}

describe.each(DIALECTS)("incremental channel values on %s", (dialect: DialectName) => {
  let saver: DrizzleSaver;
  let url: string;
  let raw: RawDatabase;
  beforeAll(async () => {
    ({ saver, url } = await freshSaver(dialect));
    raw = await openRaw(dialect, url);
  });
  afterAll(async () => {
    await raw?.close();
    await saver?.close();
  });

  it("random histories with lifecycle operations read back what MemorySaver reads", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 30 }), (operations) =>
        play(
          saver,
          async () => {
            const cold = await DrizzleSaver.fromUrl(url);
            return { saver: cold, close: () => cold.close() };
          },
          raw,
          operations,
        ),
      ),
      { numRuns: RUNS },
    );
  });

  it("a real chat graph's messages are stored as deltas, and its history reads like MemorySaver's", async () => {
    const run = async (checkpointer: DrizzleSaver | MemorySaver) => {
      const graph = buildChatGraph(checkpointer);
      const thread = newThread("incremental-chat");
      for (const turn of CHAT_TURNS) await graph.invoke({ messages: [turn] }, thread);
      return { thread, history: await normalHistory(graph, thread) };
    };
    const ours = await run(saver);
    const reference = await run(new MemorySaver());
    expect(ours.history).toEqual(reference.history);
    const rows = await raw.query(
      "select count(*) as n from checkpoint_blobs where thread_id = ? and channel = 'messages' and delta_chain is not null",
      [ours.thread.configurable.thread_id],
    );
    expect(Number(rows[0].n)).toBeGreaterThan(0);
  });

  it("a growing list is stored as its appended elements, and reads stay bounded", async () => {
    const thread = newThreadId("incremental-growth");
    let messages: Message[] = [];
    let parent: string | undefined;
    let version: number | undefined;
    for (let step = 0; step < 40; step++) {
      messages = [...messages, newMessage()];
      version = saver.getNextVersion(version);
      const checkpoint: Checkpoint = {
        v: 4,
        id: uuid6(-1),
        ts: new Date().toISOString(),
        channel_values: { messages },
        channel_versions: { messages: version },
        versions_seen: {},
      };
      await saver.put(config(thread, parent), checkpoint, { source: "loop", step, parents: {} }, { messages: version });
      parent = checkpoint.id;
    }
    const rows = await raw.query(
      "select type, delta_chain from checkpoint_blobs where thread_id = ? order by version",
      [thread],
    );
    // Only the first value is whole; the 40th (number 39 = 100111b) is reassembled from 4 rows + itself.
    expect(rows.filter((row) => row.delta_chain === null)).toHaveLength(1);
    const last = rows[rows.length - 1];
    const chain = JSON.parse(String(last.delta_chain)) as { seq: number; bases: string[] };
    expect(chain.seq).toBe(39);
    expect(chain.bases).toHaveLength(4);
    const tuple = await saver.getTuple(config(thread));
    expect(tuple?.checkpoint.channel_values.messages).toEqual(messages);
    // The delta-channel walk seeds from the nearest stored value: reassembled like any read.
    const walked = await saver.getDeltaChannelHistory({ config: config(thread), channels: ["messages"] });
    const base = await BaseCheckpointSaver.prototype.getDeltaChannelHistory.call(saver, {
      config: config(thread),
      channels: ["messages"],
    });
    expect(walked.messages.seed).toEqual(messages.slice(0, -1));
    expect(walked).toEqual(base);

    // A damaged chain fails the read that meets it with an error naming the value.
    await raw.query("update checkpoint_blobs set delta_chain = ? where thread_id = ? and delta_chain is not null", [
      '{"seq": 3, "bases": []}',
      thread,
    ]);
    const damaged = saver.getTuple(config(thread));
    await expect(damaged).rejects.toBeInstanceOf(SerializationError);
    await expect(damaged).rejects.toThrow(/cannot read the incremental value of channel "messages".*inconsistent/);
  });

  it("an element changed in place, at any depth and of any kind, makes the value stored whole", async () => {
    class Tagged {
      constructor(public label: string) {}
    }
    class Hidden {
      #secret = "a";
      set(value: string) {
        this.#secret = value;
      }
      toJSON() {
        return { secret: this.#secret };
      }
    }
    const changes: [string, () => unknown, (element: never) => void][] = [
      [
        "a nested field",
        () => ({ a: { b: [1, { c: "x" }] } }),
        (e: { a: { b: [number, { c: string }] } }) => {
          e.a.b[1].c = "y";
        },
      ],
      [
        "an added field",
        () => ({ a: 1 }),
        (e: Record<string, number>) => {
          e.b = 2;
        },
      ],
      [
        "an array element",
        () => [1, 2, 3],
        (e: number[]) => {
          e[1] = 5;
        },
      ],
      [
        "a Date",
        () => ({ at: new Date(0) }),
        (e: { at: Date }) => {
          e.at.setTime(5);
        },
      ],
      [
        "bytes",
        () => ({ bytes: Buffer.from("abc") }),
        (e: { bytes: Buffer }) => {
          e.bytes[0] = 0x7a;
        },
      ],
      [
        "a class instance",
        () => new Tagged("a"),
        (e: Tagged) => {
          e.label = "b";
        },
      ],
      [
        "a message's content",
        () => new HumanMessage({ content: "a", id: "h1" }),
        (e: HumanMessage) => {
          e.content = "b";
        },
      ],
      ["a private field behind toJSON", () => new Hidden(), (e: Hidden) => e.set("b")],
    ];
    // What a value is as JSON (messages and toJSON classes as toJSON gives them, bytes as numbers), taken when put.
    const bytes = (v: unknown) => (ArrayBuffer.isView(v) ? Array.from(v as Uint8Array) : v);
    const plain = (value: unknown) =>
      JSON.parse(JSON.stringify(value, (_, v) => (v?.type === "Buffer" ? v.data : bytes(v))));
    for (const [what, make, change] of changes) {
      const thread = newThreadId("in-place");
      const first = make();
      let parent: string | undefined;
      let version: number | undefined;
      const expected: unknown[][] = [];
      const second = make();
      for (const items of [[first], [first, second], [first, second, make()]]) {
        if (items.length === 3) change(first as never);
        version = saver.getNextVersion(version);
        const checkpoint: Checkpoint = {
          v: 4,
          id: uuid6(-1),
          ts: new Date().toISOString(),
          channel_values: { items },
          channel_versions: { items: version },
          versions_seen: {},
        };
        await saver.put(
          config(thread, parent),
          checkpoint,
          { source: "loop", step: 0, parents: {} },
          { items: version },
        );
        expected.push(plain(items));
        parent = checkpoint.id;
      }
      const read = await saver.getTuple(config(thread));
      const stored = read?.checkpoint.channel_values.items as unknown[];
      expect(plain(stored), what).toEqual(expected[2]);
      // The second value, unchanged, was stored as its appended element (but where a toJSON may hide what changed).
      const rows = await raw.query(
        "select delta_chain from checkpoint_blobs where thread_id = ? and channel = 'items' order by version",
        [thread],
      );
      const asDelta = !(first instanceof Hidden);
      expect(
        rows.map((row) => row.delta_chain !== null),
        what,
      ).toEqual([false, asDelta, false]);
    }
  });
});

/** The other drivers: the same histories (the row-level integrity check runs on the three above). */
describe.each(EXTRA_DRIVERS)("incremental channel values through %s", (driver: ExtraDriver) => {
  let fresh: Awaited<ReturnType<typeof freshDriverSaver>>;
  beforeAll(async () => {
    fresh = await freshDriverSaver(driver);
  });
  afterAll(async () => {
    await fresh?.saver.close();
    await fresh?.database.close();
  });

  it("random histories with lifecycle operations read back what MemorySaver reads", async () => {
    const openCold: OpenCold = async () => {
      const another = await fresh.database.another();
      return { saver: new DrizzleSaver(another.db), close: () => another.close() };
    };
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 20 }), (operations) =>
        play(fresh.saver, openCold, undefined, operations),
      ),
      { numRuns: Math.max(1, Math.ceil(RUNS / 2)) },
    );
    // D1 through miniflare makes every statement an HTTP round trip to workerd: 26 to 35 s
    // on a loaded 2-core machine, past the default 60 s under the load script.
  }, 180_000);
});
