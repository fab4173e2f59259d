// Issue 31, finding 3: an export reads a thread in pages. A prune, sweep or delete of
// that thread between two pages used to leave checkpoints in the file whose values were
// gone, and the import took them. Now such a thread fails the export (an abort line,
// ThreadChangedError); every thread the file holds whole imports and reads back whole.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { type DrizzleSaver, exportThreads, importThreads } from "../../src/index.js";
import { DIALECTS } from "../helpers/databases.js";
import { freshTargets, writeSyntheticFile } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "lgcd-consistent-"));
const target = freshTargets();

/**
 * Collects an export's lines; at the first checkpoint line of a thread named in
 * `actions` (the first page of its checkpoints is read, the rest is not) it runs that
 * thread's action before taking the line, holding the export there.
 */
class RacingSink extends Writable {
  readonly lines: string[] = [];
  private thread = "";
  private readonly done = new Set<string>();

  constructor(private readonly actions: Record<string, () => Promise<unknown>>) {
    super({ highWaterMark: 1 });
  }

  override _write(chunk: Buffer, _encoding: string, callback: (error?: Error | null) => void): void {
    const line = chunk.toString("utf8").trimEnd();
    this.lines.push(line);
    const parsed = JSON.parse(line) as { kind: string; thread_id?: string };
    if (parsed.kind === "thread") this.thread = parsed.thread_id as string;
    const action = this.actions[this.thread];
    if (parsed.kind !== "checkpoint" || !action || this.done.has(this.thread)) {
      callback();
      return;
    }
    this.done.add(this.thread);
    action().then(() => callback(), callback);
  }
}

/** Every checkpoint of the thread reads with its channel value and a parent that exists. */
async function expectWhole(saver: DrizzleSaver, threadId: string, checkpoints: number): Promise<void> {
  const ids = new Set<string>();
  const parents: string[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    expect(tuple.checkpoint.channel_values.messages, `${threadId} ${tuple.checkpoint.id}`).toBeDefined();
    ids.add(tuple.checkpoint.id);
    if (tuple.parentConfig) parents.push(tuple.parentConfig.configurable?.checkpoint_id as string);
  }
  expect(ids.size).toBe(checkpoints);
  for (const parent of parents) expect(ids.has(parent), `${threadId}: parent ${parent}`).toBe(true);
}

describe.each(DIALECTS)("an export racing removals on %s", (dialect) => {
  it("exports each thread as it was or not at all, and what it exports imports whole", {
    timeout: 180_000,
  }, async () => {
    const source = await target(dialect);
    const file = join(dir, `source-${dialect}.jsonl`);
    // 300 checkpoints a thread: two pages of checkpoints, blobs and writes each.
    await writeSyntheticFile(file, { threads: 4, checkpoints: 300, prefix: `race-${dialect}` });
    expect(await importThreads(source.url, { file })).toMatchObject({ imported: 4, failed: [] });
    const [pruned, deleted, swept, untouched] = [0, 1, 2, 3].map((i) => `race-${dialect}-${i}`);

    const sink = new RacingSink({
      [pruned]: () => source.saver.prune([pruned]),
      [deleted]: () => source.saver.deleteThread(deleted),
      // Also prunes the untouched thread, which is read after it: its export is of that state.
      [swept]: () => source.saver.sweep({ idleFor: "1s", strategy: "keep_latest" }),
    });
    const summary = await exportThreads({ url: source.url }, sink);
    expect(summary.threads).toBe(4);
    expect(summary.failed.map((f) => f.threadId).sort()).toEqual([pruned, deleted, swept]);
    for (const { error } of summary.failed) expect(error).toMatch(/changed while it was read/);

    const copy = join(dir, `export-${dialect}.jsonl`);
    writeFileSync(copy, `${sink.lines.join("\n")}\n`);
    const imported = await target(dialect);
    const result = await importThreads(imported.url, { file: copy });
    expect(result).toMatchObject({ imported: 1 });
    expect(result.failed.map((f) => f.threadId).sort()).toEqual([pruned, deleted, swept]);
    await expectWhole(imported.saver, untouched, 1);
  });
});
