// Issue 31, finding 2: values in a transfer file are decoded before they are written.
// A thread with a value that cannot be read, or whose checkpoints name channel values
// or delta bases the file lacks, fails whole; the file's other threads are imported,
// and reads across threads (`list({})`) keep working.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type DrizzleSaver, importThreads, MsgpackSerializer, type TransferRecord } from "../../src/index.js";
import { endLine, footerLine, headerLine, recordLine, threadLine } from "../../src/transfer/format.js";
import { countRecord, noRecords } from "../../src/transfer/records.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { runCli } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "lgcd-bad-values-"));
const savers: DrizzleSaver[] = [];
afterAll(async () => {
  for (const saver of savers) await saver.close();
});

const serde = new MsgpackSerializer();
const version = (n: number) => `${String(n).padStart(32, "0")}.${"1".repeat(16)}`;
const checkpointId = (n: number) => `1ef00000-0000-6000-8000-${String(n).padStart(12, "0")}`;
/** A MessagePack document that no reader accepts: 0xc1 is never used. */
const NEVER_USED = new Uint8Array([0xc1]);

/**
 * A thread of two checkpoints: the first stores `messages` whole, the second as an
 * incremental value extending it, with a pending write on each. `damage` changes
 * the rows before they are written to the file.
 */
async function thread(damage: (records: TransferRecord[]) => TransferRecord[] = (r) => r): Promise<TransferRecord[]> {
  const [wholeType, whole] = await serde.dumpsTyped(["hello"]);
  const [, appended] = await serde.dumpsTyped(["world"]);
  const records: TransferRecord[] = [
    { kind: "blob", ns: "", channel: "messages", version: version(1), type: wholeType, value: whole },
    {
      kind: "blob",
      ns: "",
      channel: "messages",
      version: version(2),
      type: `delta:${wholeType}`,
      value: appended,
      deltaChain: JSON.stringify({ seq: 1, bases: [version(1)] }),
    },
  ];
  for (const n of [1, 2]) {
    const versions = { messages: version(n) };
    const [type, checkpoint] = await serde.dumpsTyped({
      v: 4,
      id: checkpointId(n),
      ts: new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString(),
      channel_versions: versions,
      versions_seen: {},
    });
    records.push({
      kind: "checkpoint",
      ns: "",
      checkpointId: checkpointId(n),
      parentCheckpointId: n === 1 ? null : checkpointId(1),
      createdAt: Date.UTC(2025, 0, 1, 0, 0, n),
      type,
      checkpoint,
      channelVersions: versions,
      metadata: { step: n, source: "loop" },
    });
    const [writeType, value] = await serde.dumpsTyped({ text: `write ${n}` });
    records.push({
      kind: "write",
      ns: "",
      checkpointId: checkpointId(n),
      taskId: `task-${n}`,
      taskPath: "",
      idx: 0,
      channel: "messages",
      type: writeType,
      value,
    });
  }
  return damage(records);
}

const replaceKind = <K extends TransferRecord["kind"]>(
  records: TransferRecord[],
  kind: K,
  change: (record: Extract<TransferRecord, { kind: K }>) => TransferRecord | undefined,
): TransferRecord[] => {
  let done = false;
  return records.flatMap((record) => {
    if (done || record.kind !== kind) return [record];
    done = true;
    const changed = change(record as Extract<TransferRecord, { kind: K }>);
    return changed ? [changed] : [];
  });
};

/** A first checkpoint whose channel version is a number in exponent form, which no database's JSON keeps as such. */
const [exponentType, exponentCheckpoint] = await serde.dumpsTyped({
  v: 4,
  id: checkpointId(1),
  ts: new Date(Date.UTC(2025, 0, 1, 0, 0, 1)).toISOString(),
  channel_versions: { messages: 1e21 },
  versions_seen: {},
});

/** The damaged threads, each with the start of the error it must fail with. */
const DAMAGED: Record<string, [(records: TransferRecord[]) => TransferRecord[], RegExp]> = {
  "bad-checkpoint": [
    (r) => replaceKind(r, "checkpoint", (c) => ({ ...c, checkpoint: NEVER_USED })),
    /^checkpoint "1ef00000-0000-6000-8000-000000000001" \(namespace ""\) cannot be read: .*invalid msgpack type byte 0xc1/,
  ],
  "bad-blob": [
    (r) => replaceKind(r, "blob", (b) => ({ ...b, value: NEVER_USED })),
    /^the value of channel "messages" at version "0+1\.1+" \(namespace ""\) cannot be read: .*0xc1/,
  ],
  "bad-delta": [
    (r) => r.map((record) => (record.kind === "blob" && record.deltaChain ? { ...record, value: NEVER_USED } : record)),
    /^the value of channel "messages" at version "0+2\.1+" \(namespace ""\) cannot be read: .*0xc1/,
  ],
  "bad-write": [
    (r) => replaceKind(r, "write", (w) => ({ ...w, value: NEVER_USED })),
    /^the pending write of task "task-1" to channel "messages" of checkpoint .* cannot be read: .*0xc1/,
  ],
  "missing-blob": [
    (r) => r.filter((record) => !(record.kind === "blob" && record.deltaChain)),
    /^checkpoint "1ef00000-0000-6000-8000-000000000002" \(namespace ""\) names the value of channel "messages" at version "0+2\.1+" \(namespace ""\), which the source does not hold/,
  ],
  "missing-base": [
    // Only the second checkpoint: its value extends the first one's, which is not in the file.
    (r) =>
      r.filter(
        (record) =>
          !(record.kind === "blob" && record.version === version(1)) &&
          !(record.kind !== "blob" && record.checkpointId === checkpointId(1)),
      ),
    /^the value of channel "messages" at version "0+2\.1+" \(namespace ""\) extends version "0+1\.1+", which the source does not hold/,
  ],
  "exponent-version": [
    // The first checkpoint alone, its value's row keyed "1e+21": whole, but PostgreSQL's JSON prints 1e21 in full.
    (r) =>
      r
        .filter((record) => record.kind === "blob" || record.checkpointId === checkpointId(1))
        .filter((record) => !(record.kind === "blob" && record.deltaChain))
        .map((record) => {
          if (record.kind === "blob") return { ...record, version: String(1e21) };
          if (record.kind !== "checkpoint") return record;
          return { ...record, type: exponentType, checkpoint: exponentCheckpoint, channelVersions: { messages: 1e21 } };
        }),
    /^checkpoint "1ef00000-0000-6000-8000-000000000001" \(namespace ""\): the version of channel "messages" is 1e\+21, which cannot name a value/,
  ],
  "other-copy": [
    (r) => replaceKind(r, "checkpoint", (c) => ({ ...c, channelVersions: { messages: version(7) } })),
    /"channel_versions" differs from the versions inside the checkpoint/,
  ],
};

/** A file of two good threads around the damaged ones. */
async function writeFile(path: string): Promise<void> {
  const threads: [string, TransferRecord[]][] = [["good-a", await thread()]];
  for (const [id, [damage]] of Object.entries(DAMAGED)) threads.push([id, await thread(damage)]);
  threads.push(["good-b", await thread()]);
  const lines = [headerLine()];
  for (const [id, records] of threads) {
    const counts = noRecords();
    lines.push(threadLine(id));
    for (const record of records) {
      countRecord(counts, record);
      lines.push(recordLine(record));
    }
    lines.push(endLine(id, counts));
  }
  lines.push(footerLine(threads.length));
  writeFileSync(path, `${lines.join("\n")}\n`);
}

async function target(dialect: DialectName) {
  const fresh = await freshSaver(dialect);
  savers.push(fresh.saver);
  return fresh;
}

describe.each(DIALECTS)("values of a transfer file on %s", (dialect) => {
  it("are decoded before anything is written: a damaged thread fails whole, the others are imported", async () => {
    const file = join(dir, `damaged-${dialect}.jsonl`);
    await writeFile(file);
    const { saver, url } = await target(dialect);

    const summary = await importThreads(url, { file });
    expect(summary.sourceError).toBeUndefined();
    expect(summary.imported).toBe(2);
    expect(summary.failed.map((f) => f.threadId)).toEqual(Object.keys(DAMAGED));
    for (const failure of summary.failed) expect(failure.error).toMatch(DAMAGED[failure.threadId][1]);

    // Nothing of the damaged threads is stored, and every read across threads works.
    const seen: string[] = [];
    for await (const tuple of saver.list({})) seen.push(tuple.config.configurable?.thread_id as string);
    expect([...new Set(seen)].sort()).toEqual(["good-a", "good-b"]);
    const newest = await saver.getTuple({ configurable: { thread_id: "good-b", checkpoint_ns: "" } });
    expect(newest?.checkpoint.channel_values.messages).toEqual(["hello", "world"]);
    expect(newest?.pendingWrites).toEqual([["task-2", "messages", { text: "write 2" }]]);

    // The CLI reports them the same way, and a dry run finds them too.
    const dry = await runCli(["import", "--url", url, "--file", file, "--dry-run", "--json"]);
    expect(dry.code).toBe(1);
    expect(JSON.parse(dry.stdout).failed.map((f: { threadId: string }) => f.threadId)).toEqual(Object.keys(DAMAGED));
  });
});
