/** Threads the encryption tests write: incremental messages, a note and a pending write per step. */
import type { RunnableConfig } from "@langchain/core/runnables";
import { type ChannelVersions, type Checkpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import type { DrizzleSaver } from "../../src/index.js";

/** Puts `steps` checkpoints on a thread, each appending a message (incremental values) and setting `note`. */
export async function grow(saver: DrizzleSaver, threadId: string, secret: string, steps = 3) {
  let messages: string[] = [];
  const versions: ChannelVersions = {};
  let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  const configs: RunnableConfig[] = [];
  for (let step = 0; step < steps; step++) {
    messages = [...messages, `${secret} message ${step}`];
    const newVersions: ChannelVersions = {};
    for (const channel of ["messages", "note"]) {
      versions[channel] = saver.getNextVersion(versions[channel] as number | undefined);
      newVersions[channel] = versions[channel];
    }
    const checkpoint: Checkpoint = {
      v: 4,
      id: uuid6(step),
      ts: new Date().toISOString(),
      channel_values: { messages, note: `${secret} note ${step}` },
      channel_versions: { ...versions },
      versions_seen: {},
    };
    config = await saver.put(config, checkpoint, { source: "loop", step, parents: {} }, newVersions);
    await saver.putWrites(config, [["note", `${secret} write ${step}`]], `task-${step}`);
    configs.push(config);
  }
  return { configs, messages };
}
