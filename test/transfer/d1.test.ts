// Issue 31, finding 9: an import into Cloudflare D1 (through miniflare's local D1).
// A batch of 100 ordinary rows used to go in as one insert per table, whose values
// beyond D1's 100 bound parameters became literals in its text, past D1's 100,000
// bytes (SQLITE_TOOBIG). Inserts are now sized to the driver's parameter limit.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/d1";
import type { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver, exportThreads, importThreads, MsgpackSerializer } from "../../src/index.js";
import { endLine, footerLine, headerLine, recordLine, threadLine } from "../../src/transfer/format.js";
import type { TransferRecord } from "../../src/transfer/records.js";
import { OurSource } from "../../src/transfer/sources/ours.js";
import { resolve } from "../../src/wiring/registry.js";
import { openLocalD1 } from "../helpers/miniflare.js";
import { readText, threadsOfFile } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "lgcd-d1-transfer-"));
let miniflare: Miniflare;
let db: ReturnType<typeof drizzle>;

beforeAll(async () => {
  const local = await openLocalD1();
  miniflare = local.miniflare;
  db = drizzle(local.binding);
  await new DrizzleSaver(db).setup();
}, 120_000);

afterAll(async () => {
  await miniflare?.dispose();
});

/**
 * A thread of `checkpoints` ordinary checkpoints of a graph with 16 channels, every
 * checkpoint line first (so one batch holds 100 checkpoints), then the values.
 */
async function graphThread(path: string, threadId: string, checkpoints: number): Promise<void> {
  const serde = new MsgpackSerializer();
  const channels = Array.from({ length: 16 }, (_, c) => `channel_${c}`);
  const lines = [headerLine(), threadLine(threadId)];
  const blobs: TransferRecord[] = [];
  let parent: string | null = null;
  const base = Date.UTC(2025, 0, 1);
  for (let i = 0; i < checkpoints; i++) {
    const id = `1ef00000-0000-6000-8000-${String(i).padStart(12, "0")}`;
    const version = `${String(i + 1).padStart(32, "0")}.${"2".repeat(16)}`;
    const versions = Object.fromEntries(channels.map((channel) => [channel, version]));
    const [type, bytes] = await serde.dumpsTyped({
      v: 4,
      id,
      ts: new Date(base + i).toISOString(),
      channel_versions: versions,
      versions_seen: { agent: versions },
    });
    lines.push(
      recordLine({
        kind: "checkpoint",
        ns: "",
        checkpointId: id,
        parentCheckpointId: parent,
        createdAt: base + i,
        type,
        checkpoint: bytes,
        channelVersions: versions,
        metadata: { source: "loop", step: i, parents: {}, run_id: "run-d1", user: "someone@example.com" },
      }),
    );
    for (const channel of channels) {
      const [valueType, value] = await serde.dumpsTyped(`${channel} at ${i}`);
      blobs.push({ kind: "blob", ns: "", channel, version, type: valueType, value });
    }
    parent = id;
  }
  for (const blob of blobs) lines.push(recordLine(blob));
  lines.push(endLine(threadId, { checkpoints, blobs: blobs.length, writes: 0 }), footerLine(1));
  writeFileSync(path, `${lines.join("\n")}\n`);
}

describe("an import into D1", () => {
  it("writes a thread whose batches hold 100 ordinary checkpoints, and exports it back the same", {
    timeout: 120_000,
  }, async () => {
    const file = join(dir, "d1.jsonl");
    await graphThread(file, "d1-graph", 150);
    const summary = await importThreads(db, { file });
    expect(summary.failed).toEqual([]);
    expect(summary).toMatchObject({ imported: 1, checkpoints: 150, blobs: 2400 });

    // Read back through the saver: a page of these checkpoints names 16 values each.
    const saver = new DrizzleSaver(db);
    let read = 0;
    for await (const tuple of saver.list({ configurable: { thread_id: "d1-graph" } })) {
      expect(Object.keys(tuple.checkpoint.channel_values)).toHaveLength(16);
      read++;
    }
    expect(read).toBe(150);
    const out = join(dir, "d1-out.jsonl");
    await exportThreads(new OurSource(resolve(db, undefined).dialect), out);
    expect(threadsOfFile(readText(out))).toEqual(threadsOfFile(readText(file)));
  });
});
