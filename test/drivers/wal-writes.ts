/** Test helper: graph-like writes (a put and its pending writes per step) for the checkpointer tests. */
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import type { DrizzleSaver } from "../../src/index.js";

/** Writes `steps` checkpoints of thread `threadId`, each after the last, with two pending writes each. */
export async function writeSteps(saver: DrizzleSaver, threadId: string, steps: number): Promise<void> {
  let config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  const latest = await saver.getTuple(config);
  if (latest) config = latest.config as typeof config;
  for (let step = 0; step < steps; step++) {
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(step), channel_values: { text: `step ${step} `.repeat(40) } };
    checkpoint.channel_versions = { text: Date.now() * 1000 + step };
    config = (await saver.put(
      config,
      checkpoint,
      { source: "loop", step, parents: {} },
      checkpoint.channel_versions,
    )) as typeof config;
    await saver.putWrites(
      config,
      [
        ["text", `write ${step}`],
        ["other", step],
      ],
      `task-${step}`,
    );
  }
}
