import type { RunnableConfig } from "@langchain/core/runnables";
import { type Checkpoint, type CheckpointTuple, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DecryptionError, type DrizzleSaver } from "../../src/index.js";
import { freshSaver } from "../helpers/databases.js";
import { openRaw, type RawDatabase } from "../helpers/raw.js";
import { TEST_ENCRYPTION } from "./keys.js";

/**
 * MySQL keys a SHA-256 of the namespace (ns_hash) and of a write's task id (task_hash)
 * beside their text. Rows moved by SQL under another namespace's or task's hash, their
 * text left as it was, still open for the place their text names: the read must refuse
 * them rather than serve one namespace's values for another or a write twice.
 */
describe("rows moved under another hash on mysql", () => {
  let saver: DrizzleSaver;
  let raw: RawDatabase;

  beforeAll(async () => {
    let url: string;
    ({ saver, url } = await freshSaver("mysql", { encryption: { ...TEST_ENCRYPTION, cacheBytes: 0 } }));
    raw = await openRaw("mysql", url);
  });
  afterAll(async () => {
    await saver.close();
    await raw.close();
  });

  /** One checkpoint in (thread, ns) with a note and a pending write of task-a. */
  async function putOne(threadId: string, ns: string, secret: string): Promise<RunnableConfig> {
    const version = saver.getNextVersion(undefined);
    const checkpoint: Checkpoint = {
      v: 4,
      id: uuid6(0),
      ts: new Date().toISOString(),
      channel_values: { note: secret },
      channel_versions: { note: version },
      versions_seen: {},
    };
    const config = await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: ns } },
      checkpoint,
      { source: "loop", step: 0, parents: {} },
      { note: version },
    );
    await saver.putWrites(config, [["note", `${secret} write`]], "task-a");
    return config;
  }

  async function listed(config: RunnableConfig): Promise<CheckpointTuple[]> {
    const tuples: CheckpointTuple[] = [];
    for await (const tuple of saver.list(config)) tuples.push(tuple);
    return tuples;
  }

  it("a checkpoint row moved to another namespace's hash is refused, not read with its own namespace's values", async () => {
    await putOne("moved-ns", "sub:S", "SECRET-S");
    await putOne("moved-ns", "sub:T", "SECRET-T");
    // T's checkpoint replaced by S's: only its hash changes, S's values stay where they are.
    await raw.query("delete from checkpoints where thread_id = 'moved-ns' and checkpoint_ns = 'sub:T'");
    await raw.query(
      "update checkpoints set ns_hash = unhex(sha2('sub:T', 256)) where thread_id = 'moved-ns' and checkpoint_ns = 'sub:S'",
    );
    const asked = { configurable: { thread_id: "moved-ns", checkpoint_ns: "sub:T" } };
    const error = await saver.getTuple(asked).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DecryptionError);
    expect(String(error)).toMatch(/thread "moved-ns" was read for namespace "sub:T" but names namespace "sub:S"/);
    await expect(listed(asked)).rejects.toThrow(DecryptionError);
  });

  it("a pending write copied under another task's hash is refused, not returned twice", async () => {
    const config = await putOne("moved-task", "", "SECRET-W");
    await raw.query(
      `insert into checkpoint_writes (thread_id, checkpoint_ns, ns_hash, checkpoint_id, task_id, task_hash, idx, channel, type, \`blob\`, task_path)
       select thread_id, checkpoint_ns, ns_hash, checkpoint_id, task_id, unhex(sha2('task-b', 256)), idx, channel, type, \`blob\`, task_path
       from checkpoint_writes where thread_id = 'moved-task'`,
    );
    const error = await saver.getTuple(config).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DecryptionError);
    expect(String(error)).toMatch(/task "task-a" of thread "moved-task".* is stored twice/);
    await expect(listed({ configurable: { thread_id: "moved-task" } })).rejects.toThrow(DecryptionError);
    // The delta history reads the same writes (of the parent of a later checkpoint).
    const next: Checkpoint = {
      v: 4,
      id: uuid6(1),
      ts: new Date().toISOString(),
      channel_values: {},
      channel_versions: {},
      versions_seen: {},
    };
    const child = await saver.put(config, next, { source: "loop", step: 1, parents: {} }, {});
    await expect(saver.getDeltaChannelHistory({ config: child, channels: ["note"] })).rejects.toThrow(DecryptionError);
  });
});
