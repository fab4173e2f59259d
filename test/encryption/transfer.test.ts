import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunnableConfig } from "@langchain/core/runnables";
import { type ChannelVersions, type Checkpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { type DrizzleSaver, type EncryptionOptions, exportThreads, importThreads } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { KEY_1, KEY_2 } from "./keys.js";

/**
 * Export and import with encryption at rest: the file carries sealed values unless
 * `decrypt` is given; an import opens them, checks them and re-seals them for the target.
 */
const SOURCE_KEYS: EncryptionOptions = { keys: { k1: KEY_1 }, activeKeyId: "k1" };
const TARGET_KEYS: EncryptionOptions = { keys: { k1: KEY_1, k2: KEY_2 }, activeKeyId: "k2" };

async function fill(saver: DrizzleSaver, threadId: string): Promise<RunnableConfig> {
  let messages: string[] = [];
  const versions: ChannelVersions = {};
  let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  for (let step = 0; step < 3; step++) {
    messages = [...messages, `TOP-SECRET message ${step}`];
    versions.messages = saver.getNextVersion(versions.messages as number | undefined);
    const checkpoint: Checkpoint = {
      v: 4,
      id: uuid6(step),
      ts: new Date().toISOString(),
      channel_values: { messages },
      channel_versions: { ...versions },
      versions_seen: {},
    };
    config = await saver.put(config, checkpoint, { source: "loop", step, parents: {} }, { ...versions });
    await saver.putWrites(config, [["messages", [`TOP-SECRET write ${step}`]]], `task-${step}`);
  }
  return config;
}

describe.each(DIALECTS)("export and import of sealed values on %s", (dialect: DialectName) => {
  it("the file carries sealed values; an import with the keys re-seals them for the target", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lgcd-enc-"));
    const { saver: source, url } = await freshSaver(dialect, { encryption: SOURCE_KEYS });
    const { saver: target, url: targetUrl } = await freshSaver(dialect, { encryption: TARGET_KEYS });
    const { saver: plainTarget, url: plainUrl } = await freshSaver(dialect);
    try {
      const config = await fill(source, "moved");
      const want = await source.getTuple(config);
      const file = join(dir, "sealed.jsonl");
      expect(await exportThreads({ url }, file)).toMatchObject({ threads: 1, failed: [] });
      // Values are base64 in the file: what shows they are sealed is their type.
      expect(readFileSync(file, "utf8")).toContain('"enc1.k1:');

      // Without the keys the thread fails, naming what is sealed; nothing is written.
      const refused = await importThreads(plainUrl, { file });
      expect(refused.imported).toBe(0);
      expect(refused.failed[0]?.error).toMatch(/sealed/);
      expect(await plainTarget.getTuple({ configurable: { thread_id: "moved" } })).toBeUndefined();

      expect(await importThreads(targetUrl, { file }, { encryption: TARGET_KEYS })).toMatchObject({
        imported: 1,
        failed: [],
      });
      const got = await target.getTuple(config);
      expect(got?.checkpoint.channel_values).toEqual(want?.checkpoint.channel_values);
      expect(got?.pendingWrites).toEqual(want?.pendingWrites);
      expect((await target.encryptionStatus()).keys).toEqual({ k2: 6 });

      // --decrypt: the file holds the values in the clear; a saver without keys imports them.
      const clear = join(dir, "clear.jsonl");
      expect(await exportThreads({ url }, clear, { decrypt: SOURCE_KEYS })).toMatchObject({ failed: [] });
      expect(readFileSync(clear, "utf8")).not.toContain("enc1.");
      expect(await importThreads(plainUrl, { file: clear })).toMatchObject({ imported: 1, failed: [] });
      expect((await plainTarget.getTuple(config))?.checkpoint.channel_values).toEqual(want?.checkpoint.channel_values);
    } finally {
      for (const saver of [source, target, plainTarget]) await saver.close();
    }
  });
});
