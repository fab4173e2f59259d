// Issue 31, finding 1: a transfer file with a line longer than the bound fails the
// thread that holds it (a rejected promise or a failure in the summary, naming the
// line), the other threads are imported, the process lives on; batches are bounded
// in bytes as well as rows.
import { once } from "node:events";
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_MAX_LINE_BYTES,
  InvalidInputError,
  importThreads,
  MsgpackSerializer,
  type TransferRecord,
  type TransferSource,
} from "../../src/index.js";
import { BATCH_BYTES, stagingThreadId } from "../../src/transfer/target.js";
import { DIALECTS } from "../helpers/databases.js";
import { openRaw } from "../lifecycle/support.js";
import { freshTargets, runCli, threadIds, writeSyntheticFile } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "lgcd-long-lines-"));
const target = freshTargets();

const MiB = 1024 * 1024;

/**
 * A synthetic file of 3 threads in which the first blob line of the second thread is
 * replaced by a blob line of `length` bytes (a base64 value of zeros), written in
 * chunks so no string of that size is ever built. Returns the long line's number.
 */
async function fileWithLongLine(path: string, prefix: string, length: number): Promise<number> {
  const small = join(dir, `${prefix}-small.jsonl`);
  await writeSyntheticFile(small, { threads: 3, checkpoints: 3, prefix });
  const lines = readFileSync(small, "utf8").split("\n");
  const index = lines.findIndex((line) => line.includes(`"thread_id":"${prefix}-1"`)) + 1;
  expect(lines[index]).toMatch(/^\{"kind":"blob"/);
  const head = lines[index].slice(0, lines[index].indexOf('"value":"') + '"value":"'.length);
  const tail = '"}';
  const out = createWriteStream(path);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, "drain");
  };
  await write(`${lines.slice(0, index).join("\n")}\n${head}`);
  let left = length - head.length - tail.length;
  left -= left % 4;
  const chunk = "A".repeat(MiB);
  while (left > 0) {
    const size = Math.min(left, chunk.length);
    await write(size === chunk.length ? chunk : chunk.slice(0, size));
    left -= size;
  }
  await write(`${tail}\n${lines.slice(index + 1).join("\n")}`);
  out.end();
  await once(out, "close");
  return index + 1;
}

/** One file with a line 1 MiB above the default bound, for every dialect. */
let huge: Promise<{ file: string; line: number }> | undefined;
function hugeFile() {
  const file = join(dir, "default-bound.jsonl");
  huge ??= fileWithLongLine(file, "huge", DEFAULT_MAX_LINE_BYTES + MiB).then((line) => ({ file, line }));
  return huge;
}

describe.each(DIALECTS)("a line longer than the bound on %s", (dialect) => {
  it("fails its thread naming the line; the other threads are imported, nothing of it written", async () => {
    const file = join(dir, `small-bound-${dialect}.jsonl`);
    const line = await fileWithLongLine(file, `long-${dialect}`, 200 * 1024);
    const { saver, url } = await target(dialect);

    const summary = await importThreads(url, { file, maxLineBytes: 64 * 1024 });
    expect(summary.imported).toBe(2);
    expect(summary.sourceError).toBeUndefined();
    expect(summary.failed).toHaveLength(1);
    expect(summary.failed[0].threadId).toBe(`long-${dialect}-1`);
    expect(summary.failed[0].error).toMatch(
      new RegExp(`^line ${line}: \\d+ bytes long, more than the longest line allowed \\(65536 bytes`),
    );
    expect(await threadIds(saver)).toEqual([`long-${dialect}-0`, `long-${dialect}-2`]);
  });

  it("with the default bound, a line a little above it", { timeout: 300_000 }, async () => {
    const { file, line } = await hugeFile();
    const { saver, url } = await target(dialect);

    const summary = await importThreads(url, { file });
    expect(summary.failed).toEqual([
      {
        threadId: "huge-1",
        error: expect.stringMatching(new RegExp(`^line ${line}: \\d+ bytes long, more than the longest line allowed`)),
      },
    ]);
    expect(summary.imported).toBe(2);
    expect(await threadIds(saver)).toEqual(["huge-0", "huge-2"]);
  });
});

describe("the bound on lines", () => {
  it("is a CLI option; a bad file is a rejected promise, never a crash", async () => {
    const file = join(dir, "cli.jsonl");
    const line = await fileWithLongLine(file, "cli", 100 * 1024);
    const { saver, url } = await target("sqlite");
    const cli = await runCli(["import", "--url", url, "--file", file, "--max-line-bytes", "64KiB"]);
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.stdout).toContain(`failed: thread "cli-1": line ${line}: `);
    expect(cli.stdout).toContain("more than the longest line allowed (65536 bytes");
    expect(await threadIds(saver)).toEqual(["cli-0", "cli-2"]);

    // A path that cannot be read as a file, and a bound out of range.
    const directory = join(dir, "a-directory");
    mkdirSync(directory);
    await expect(importThreads(url, { file: directory })).rejects.toThrow(InvalidInputError);
    await expect(importThreads(url, { file: directory })).rejects.toThrow(/^line 1: cannot read the file: EISDIR/);
    await expect(importThreads(url, { file, maxLineBytes: 0 })).rejects.toThrow(/maxLineBytes must be an integer/);
    expect(await threadIds(saver)).toEqual(["cli-0", "cli-2"]);

    // A stream that fails inside a thread: that thread fails, the source stops, both say why.
    const text = readFileSync(file, "utf8");
    const cut = text.indexOf('"thread_id":"cli-1"') + 200;
    const failing = new Readable({
      read() {
        this.push(text.slice(0, cut));
        this.destroy(new Error("disk gone"));
      },
    });
    const summary = await importThreads(url, { file: failing });
    expect(summary.failed).toEqual([
      { threadId: "cli-1", error: expect.stringMatching(/cannot read the file: disk gone/) },
    ]);
    expect(summary.sourceError).toMatch(/^line \d+: cannot read the file: disk gone/);
    expect(await threadIds(saver)).toEqual(["cli-0", "cli-2"]);
  });
});

describe.each(DIALECTS)("batches on %s", (dialect) => {
  it("are bounded in bytes: rows of several megabytes are written a few at a time", { timeout: 120_000 }, async () => {
    const { saver, url } = await target(dialect);
    const raw = await openRaw(dialect, url);
    const serde = new MsgpackSerializer();
    const threadId = `big-rows-${dialect}`;
    const staging = stagingThreadId(threadId);
    const stagedBlobs = async () => {
      const [row] = await raw.query("select count(*) as n from checkpoint_blobs where thread_id = ?", [staging]);
      return Number(row.n);
    };
    const rowBytes = BATCH_BYTES + 1024;
    const held: number[] = [];
    async function* records(): AsyncGenerator<TransferRecord> {
      const versions: Record<string, string> = {};
      for (let i = 0; i < 5; i++) {
        // Asked for the next row: the rows before it are written, none held back.
        held.push(i - (await stagedBlobs()));
        const version = `${String(i + 1).padStart(32, "0")}.${"1".repeat(16)}`;
        versions[`c${i}`] = version;
        const [type, value] = await serde.dumpsTyped(new Uint8Array(rowBytes).fill(i));
        yield { kind: "blob", ns: "", channel: `c${i}`, version, type, value };
      }
      const id = "1ef00000-0000-6000-8000-000000000000";
      const [type, checkpoint] = await serde.dumpsTyped({
        v: 4,
        id,
        ts: new Date(0).toISOString(),
        channel_versions: versions,
        versions_seen: {},
      });
      yield {
        kind: "checkpoint",
        ns: "",
        checkpointId: id,
        parentCheckpointId: null,
        createdAt: 0,
        type,
        checkpoint,
        channelVersions: versions,
        metadata: { step: 0 },
      };
    }
    const source: TransferSource = {
      description: "test source",
      async *threads() {
        yield { threadId, records: records() };
      },
      countThreads: async () => 1,
      close: async () => {},
    };
    try {
      const summary = await importThreads(url, source);
      expect(summary).toMatchObject({ imported: 1, blobs: 5, failed: [] });
      expect(held).toEqual([0, 0, 0, 0, 0]);
      const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
      expect(tuple?.checkpoint.channel_values.c4).toHaveLength(rowBytes);
    } finally {
      await raw.close();
    }
  });
});
