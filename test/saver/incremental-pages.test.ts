import type { RunnableConfig } from "@langchain/core/runnables";
import { type ChannelVersions, type Checkpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";

/**
 * The statement that loads a page's blobs also loads the bases of at most 64 of its
 * incremental values (Dialect.chainBaseBlobs); a page with more, and a list page of more
 * than 10 checkpoints on PostgreSQL, gets the rest from a query of its own. Both together
 * read every value.
 */
describe.each(DIALECTS)("incremental values of large pages on %s", (dialect: DialectName) => {
  let saver: DrizzleSaver;

  beforeAll(async () => {
    ({ saver } = await freshSaver(dialect));
  });
  afterAll(async () => {
    await saver.close();
  });

  /** Puts `steps` checkpoints, each appending one element to every channel; returns the values of each. */
  async function grow(threadId: string, channels: string[], steps: number) {
    const values: Record<string, string[]> = Object.fromEntries(channels.map((channel) => [channel, []]));
    const versions: ChannelVersions = {};
    const written: { config: RunnableConfig; values: Record<string, string[]> }[] = [];
    let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
    for (let step = 0; step < steps; step++) {
      const newVersions: ChannelVersions = {};
      for (const channel of channels) {
        values[channel] = [...values[channel], `${channel}:${step}`];
        versions[channel] = saver.getNextVersion(versions[channel] as number | undefined);
        newVersions[channel] = versions[channel];
      }
      const checkpoint: Checkpoint = {
        v: 4,
        id: uuid6(step),
        ts: new Date().toISOString(),
        channel_values: { ...values },
        channel_versions: { ...versions },
        versions_seen: {},
      };
      config = await saver.put(config, checkpoint, { source: "loop", step, parents: {} }, newVersions);
      written.push({ config, values: { ...values } });
    }
    return written;
  }

  it("getTuple reads a checkpoint with 70 incremental channels", async () => {
    const channels = Array.from({ length: 70 }, (_, i) => `c${i}`);
    const written = await grow("wide", channels, 4);
    for (const { config, values } of written) {
      const tuple = await saver.getTuple(config);
      expect(tuple?.checkpoint.channel_values).toEqual(values);
    }
  });

  it("list reads a page of 10 checkpoints with 70 incremental channels, their bases before the page", async () => {
    const channels = Array.from({ length: 70 }, (_, i) => `c${i}`);
    const written = await grow("wide-history", channels, 13);
    const listed = [];
    for await (const tuple of saver.list({ configurable: { thread_id: "wide-history" } }, { limit: 10 }))
      listed.push(tuple);
    expect(listed.map((tuple) => tuple.checkpoint.channel_values)).toEqual(
      written
        .slice(-10)
        .map(({ values }) => values)
        .reverse(),
    );
  });

  it("list reads a page of 100 checkpoints whose values extend each other", async () => {
    const written = await grow("long", ["messages", "events"], 110);
    const listed = [];
    for await (const tuple of saver.list({ configurable: { thread_id: "long" } })) listed.push(tuple);
    expect(listed.map((tuple) => tuple.checkpoint.channel_values)).toEqual(
      written.map(({ values }) => values).reverse(),
    );
  });
});
