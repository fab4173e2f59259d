import type { RunnableConfig } from "@langchain/core/runnables";
import type { Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { expect } from "vitest";
import { type DrizzleSaver, InvalidInputError } from "../../src/index.js";

/** Shared by the edge-case tests: a checkpoint written straight through `put`. */

export function checkpointOf(id: string, values: Record<string, unknown> = {}, versionTag = 1): Checkpoint {
  const versions = Object.fromEntries(Object.keys(values).map((channel) => [channel, `${versionTag}`]));
  return {
    v: 4,
    id,
    ts: new Date().toISOString(),
    channel_values: values,
    channel_versions: versions,
    versions_seen: {},
  };
}

export const loopMetadata = (step: number): CheckpointMetadata => ({ source: "loop", step, parents: {} });

/** Puts a checkpoint whose values are all new; returns its config. */
export async function putValues(
  saver: DrizzleSaver,
  config: RunnableConfig,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata = loopMetadata(0),
): Promise<RunnableConfig> {
  return saver.put(config, checkpoint, metadata, { ...checkpoint.channel_versions });
}

/** Awaits `work` and checks it failed with our InvalidInputError (message matching `message` when given). */
export async function expectInvalid(work: Promise<unknown>, message?: RegExp): Promise<void> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidInputError);
  if (message) expect((error as Error).message).toMatch(message);
}

/** Every item of an async iterable (Node 20 has no Array.fromAsync). */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const result: T[] = [];
  for await (const item of items) result.push(item);
  return result;
}
