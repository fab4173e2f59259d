import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { DIALECTS } from "../helpers/databases.js";
import { newThreadId, rowCounts, threadConfig, useFreshSaver } from "../lifecycle/support.js";
import { checkpointOf, expectInvalid, loopMetadata, putValues } from "./support.js";

/**
 * The limits docs/storage-model.md states hold on every dialect: each id at most 255
 * characters, and the UTF-8 bytes of a row's key (thread id, namespace, checkpoint
 * id, and task id or channel name) at most 2,600 together. Beyond them, and for text
 * a database cannot store, our InvalidInputError comes before anything is written.
 */

/** `count` distinct four-byte characters (UTF-8), so nothing compresses them. */
function fourByteText(count: number, offset = 0): string {
  return Array.from({ length: count }, (_, i) => String.fromCodePoint(0x20000 + offset + i * 7)).join("");
}

const bytes = (text: string) => Buffer.byteLength(text, "utf8");

describe.each(DIALECTS)("id and key limits on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("refuses 255-character four-byte thread, checkpoint and task ids together, writing nothing", async () => {
    const threadId = fourByteText(255, 1);
    const checkpointId = fourByteText(255, 2);
    // Thread and checkpoint id alone (2,040 bytes) are within the key budget.
    const config = await putValues(db.saver, threadConfig(threadId), checkpointOf(checkpointId, { a: 1 }));
    expect((await db.saver.getTuple(config))?.checkpoint.id).toBe(checkpointId);
    await expectInvalid(db.saver.putWrites(config, [["a", 2]], fourByteText(255, 3)), /2,?600 bytes/);
    expect((await rowCounts(db.raw, threadId)).checkpoint_writes).toBe(0);
  });

  it("accepts a write key of exactly 2,600 bytes and refuses one more", async () => {
    const threadId = fourByteText(255, 10);
    const checkpointId = fourByteText(255, 11);
    const config = await putValues(db.saver, threadConfig(threadId), checkpointOf(checkpointId));
    const taskId = fourByteText(140, 12);
    expect(bytes(threadId) + bytes(checkpointId) + bytes(taskId)).toBe(2_600);
    await db.saver.putWrites(config, [["a", 1]], taskId);
    expect((await db.saver.getTuple(config))?.pendingWrites).toEqual([[taskId, "a", 1]]);
    await expectInvalid(db.saver.putWrites(config, [["a", 1]], `${taskId}x`), /2,?600 bytes/);
    expect((await rowCounts(db.raw, threadId)).checkpoint_writes).toBe(1);
  });

  it("accepts a checkpoint key of exactly 2,600 bytes and refuses one more", async () => {
    const threadId = fourByteText(255, 20);
    const checkpointId = fourByteText(255, 21);
    const ns = fourByteText(140, 22);
    const config = await putValues(db.saver, threadConfig(threadId, ns), checkpointOf(checkpointId));
    expect((await db.saver.getTuple(config))?.checkpoint.id).toBe(checkpointId);
    await expectInvalid(
      putValues(db.saver, threadConfig(threadId, `${ns}x`), checkpointOf(checkpointId)),
      /2,?600 bytes/,
    );
    expect((await rowCounts(db.raw, threadId)).checkpoints).toBe(1);
  });

  it("refuses a channel value whose key is longer than 2,600 bytes, writing nothing", async () => {
    const threadId = fourByteText(255, 30);
    const ns = fourByteText(200, 31);
    const channel = fourByteText(255, 32);
    // thread + namespace + channel + version: 1,020 + 800 + 1,020 + 1 bytes.
    await expectInvalid(
      putValues(db.saver, threadConfig(threadId, ns), checkpointOf("c1", { [channel]: 1 })),
      /2,?600 bytes/,
    );
    expect(await rowCounts(db.raw, threadId)).toEqual({ checkpoints: 0, checkpoint_blobs: 0, checkpoint_writes: 0 });
  });
});

describe.each(DIALECTS)("validation of writes and metadata on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  async function stored(prefix: string): Promise<{ threadId: string; config: RunnableConfig }> {
    const threadId = newThreadId(prefix);
    return { threadId, config: await putValues(db.saver, threadConfig(threadId), checkpointOf("c1")) };
  }

  it.each([
    ["a lone surrogate", "bad\uD800"],
    ["U+0000", "bad\u0000"],
    ["an empty name", ""],
  ])("refuses a write channel with %s, writing nothing", async (_, channel) => {
    const { threadId, config } = await stored("bad-channel");
    await expectInvalid(
      db.saver.putWrites(
        config,
        [
          ["ok", 1],
          [channel, 2],
        ],
        "task",
      ),
      /channel/,
    );
    expect((await rowCounts(db.raw, threadId)).checkpoint_writes).toBe(0);
  });

  it.each([
    ["a lone surrogate", "path\uDC00"],
    ["U+0000", "path\u0000"],
  ])("refuses a task path with %s, writing nothing", async (_, taskPath) => {
    const { threadId, config } = await stored("bad-path");
    await expectInvalid(db.saver.putWrites(config, [["ok", 1]], "task", taskPath), /task path/);
    expect((await rowCounts(db.raw, threadId)).checkpoint_writes).toBe(0);
  });

  it("stores writes to channels named like Object.prototype members", async () => {
    const { config } = await stored("proto-channels");
    const writes: [string, unknown][] = [
      ["constructor", 1],
      ["toString", 2],
      ["__proto__", 3],
      ["hasOwnProperty", 4],
      ["__interrupt__", "stop"],
    ];
    await db.saver.putWrites(config, writes, "task");
    const tuple = await db.saver.getTuple(config);
    expect(tuple?.pendingWrites).toEqual([
      ["task", "__interrupt__", "stop"],
      ["task", "constructor", 1],
      ["task", "toString", 2],
      ["task", "__proto__", 3],
      ["task", "hasOwnProperty", 4],
    ]);
  });

  it.each([
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["a BigInt", 10n],
  ])("refuses metadata holding %s, writing nothing", async (_, value) => {
    const threadId = newThreadId("bad-metadata");
    await expectInvalid(
      putValues(db.saver, threadConfig(threadId), checkpointOf("c1", { a: 1 }), {
        ...loopMetadata(0),
        score: value,
      } as never),
      /metadata/,
    );
    expect(await rowCounts(db.raw, threadId)).toEqual({ checkpoints: 0, checkpoint_blobs: 0, checkpoint_writes: 0 });
  });

  it("copyThread to a longer thread id refuses a copy with a key past 2,600 bytes, copying nothing", async () => {
    const checkpointId = fourByteText(255, 40);
    const target = fourByteText(255, 41); // 1,020 bytes, longer than the source's id
    const copyWithTask = async (taskId: string) => {
      const source = newThreadId("copy-key");
      const config = await putValues(db.saver, threadConfig(source), checkpointOf(checkpointId, { a: 1 }));
      await db.saver.putWrites(config, [["a", 2]], taskId);
      return source;
    };
    // Under the target's id the write key is exactly 2,600 bytes: copied.
    const fits = await copyWithTask(fourByteText(140, 42));
    await db.saver.copyThread(fits, target);
    const copied = await db.saver.getTuple(threadConfig(target));
    expect(copied?.pendingWrites).toEqual([[fourByteText(140, 42), "a", 2]]);
    // One byte more: refused before anything is copied.
    const longer = `${target.slice(0, -2)}x`; // another target of 1,017 bytes
    const tooLong = await copyWithTask(`${fourByteText(140, 43)}xxxx`);
    await expectInvalid(db.saver.copyThread(tooLong, longer), /2,?600 bytes/);
    expect(await rowCounts(db.raw, longer)).toEqual({ checkpoints: 0, checkpoint_blobs: 0, checkpoint_writes: 0 });
    expect(bytes(longer) + bytes(checkpointId) + bytes(`${fourByteText(140, 43)}xxxx`)).toBe(2_601);
  });
});
