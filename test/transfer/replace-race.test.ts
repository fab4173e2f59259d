// Issue 31, finding 4: `import --replace` racing a put in flight on the thread it
// replaces. The replace used to delete the old rows in one pass: on PostgreSQL a put
// holding its parent's lock was waited for and its blobs deleted, but its checkpoint
// (committed after the delete's snapshot) stayed, without its parent or a value. Now the
// old rows go as deleteThread removes them (round after round): the put is refused with
// MissingParentError, or it landed before and is replaced with the rest.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckpointMetadata, type CheckpointTuple, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { type DrizzleSaver, importThreads, MissingParentError } from "../../src/index.js";
import { DIALECTS } from "../helpers/databases.js";
import { holdThreadRow } from "../helpers/locks.js";
import { channelValue, checkpointOf, describeError } from "../reliability/helpers.js";
import { freshTargets, writeSyntheticFile } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "lgcd-replace-race-"));
const target = freshTargets();
const ITERATIONS = 5;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Problems of a thread's checkpoints: a value named but not read, a parent missing. */
function broken(tuples: CheckpointTuple[]): string[] {
  const ids = new Set(tuples.map((t) => t.checkpoint.id));
  const problems: string[] = [];
  for (const tuple of tuples) {
    const named = Object.keys(tuple.checkpoint.channel_versions).sort().join();
    const read = Object.keys(tuple.checkpoint.channel_values).sort().join();
    if (named !== read) problems.push(`${tuple.checkpoint.id} reads [${read}] of [${named}]`);
    const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
    if (parent !== undefined && !ids.has(parent)) problems.push(`${tuple.checkpoint.id}: parent ${parent} is missing`);
  }
  return problems;
}

/** A thread of two checkpoints, the second changing only `a`; returns its newest id. */
async function oldThread(saver: DrizzleSaver, threadId: string): Promise<string> {
  let parent: string | undefined;
  for (const [step, versions] of [
    { a: "1.a", b: "1.b" },
    { a: "2.a", b: "1.b" },
  ].entries()) {
    const saved = await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: "", ...(parent ? { checkpoint_id: parent } : {}) } },
      checkpointOf(uuid6(step), { a: channelValue(versions.a, 100), b: channelValue(versions.b, 100) }, versions),
      { source: "loop", step, parents: {} } as CheckpointMetadata,
      step === 0 ? versions : { a: versions.a },
    );
    parent = saved.configurable?.checkpoint_id as string;
  }
  return parent as string;
}

describe.each(DIALECTS)("import --replace racing a put on %s", (dialect) => {
  it("leaves the imported thread, with the put refused or whole, never a checkpoint without its values", {
    timeout: 180_000,
  }, async () => {
    const { saver, url } = await target(dialect);
    const outcomes: Record<string, number> = {};
    const problems: string[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const file = join(dir, `replace-${dialect}-${i}.jsonl`);
      await writeSyntheticFile(file, { threads: 1, checkpoints: 3, prefix: `replace-${i}` });
      const threadId = `replace-${i}-0`;
      const parent = await oldThread(saver, threadId);
      const forkId = uuid6(7);
      const release = await holdThreadRow(dialect, url, threadId);
      const put = saver
        .put(
          { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: parent } },
          checkpointOf(forkId, { a: channelValue("3.a", 100), b: channelValue("1.b", 100) }, { a: "3.a", b: "1.b" }),
          { source: "loop", step: 2, parents: {} } as CheckpointMetadata,
          { a: "3.a" },
        )
        .then(
          () => "landed",
          (error: unknown) => (error instanceof MissingParentError ? "refused" : `failed: ${describeError(error)}`),
        );
      await sleep(dialect === "sqlite" ? 0 : 100);
      // Its delete waits for the put's share lock, or it commits and then waits for the row in refreshThread.
      const replace = importThreads(url, { file }, { replace: true });
      await sleep(dialect === "sqlite" ? 0 : 1500);
      await release();
      const [result, summary] = await Promise.all([put, replace]);
      expect(summary).toMatchObject({ replaced: 1, failed: [] });
      const tuples: CheckpointTuple[] = [];
      for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) tuples.push(tuple);
      const fork = tuples.some((t) => t.checkpoint.id === forkId);
      const label = `put ${result}, fork ${fork ? "kept" : "absent"}, ${tuples.length} checkpoints`;
      outcomes[label] = (outcomes[label] ?? 0) + 1;
      for (const problem of broken(tuples)) problems.push(`${threadId}: ${problem}`);
      if (result !== "landed" && fork) problems.push(`${threadId}: a put that did not land left its checkpoint`);
      if (tuples.length - (fork ? 1 : 0) !== 3) problems.push(`${threadId}: ${tuples.length} checkpoints`);
    }
    console.log(`[replace race] ${dialect} ${JSON.stringify(outcomes)}`);
    expect(problems).toEqual([]);
    expect(Object.keys(outcomes).filter((label) => label.includes("failed"))).toEqual([]);
  });
});
