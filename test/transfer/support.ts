import { spawn } from "node:child_process";
import { once } from "node:events";
import { createWriteStream, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll } from "vitest";
import { type DrizzleSaver, MsgpackSerializer } from "../../src/index.js";
import { endLine, footerLine, headerLine, recordLine, threadLine } from "../../src/transfer/format.js";
import type { TransferRecord } from "../../src/transfer/records.js";
import { type DialectName, freshSaver } from "../helpers/databases.js";

const root = resolve(import.meta.dirname, "../..");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI from source in a child process (tsx), with the given stdin. */
export function runCli(
  args: string[],
  input?: string,
  nodeArgs: string[] = [],
): Promise<CliResult> & { child: ReturnType<typeof spawn> } {
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", resolve(root, "src/cli/main.ts"), ...args], {
    cwd: root,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  child.stdin.on("error", () => {}); // a child killed before reading its input
  child.stdin.end(input ?? "");
  const done = new Promise<CliResult>((resolvePromise) => {
    child.on("close", (code) => resolvePromise({ code, stdout, stderr }));
  }) as Promise<CliResult> & { child: ReturnType<typeof spawn> };
  done.child = child;
  return done;
}

/** The lines of a transfer file grouped by thread and sorted: two files with the same content compare equal. */
export function threadsOfFile(text: string): Record<string, string[]> {
  const threads: Record<string, string[]> = {};
  let current: string[] | undefined;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const parsed = JSON.parse(line) as { kind: string; thread_id?: string };
    if (parsed.kind === "thread") {
      current = [];
      threads[parsed.thread_id as string] = current;
    } else if (parsed.kind !== "header" && parsed.kind !== "footer") {
      current?.push(line);
    }
  }
  for (const lines of Object.values(threads)) lines.sort();
  return threads;
}

export const readText = (path: string) => readFileSync(path, "utf8");

/**
 * A transfer file of synthetic threads, written as it is generated: each checkpoint
 * has a parent, a changed channel (a blob) and a pending write, like a graph step.
 */
export async function writeSyntheticFile(
  path: string,
  options: { threads: number; checkpoints: number; prefix?: string; payload?: number },
): Promise<void> {
  const serde = new MsgpackSerializer();
  const out = createWriteStream(path);
  const write = async (line: string) => {
    if (!out.write(`${line}\n`)) await once(out, "drain");
  };
  const base = Date.UTC(2025, 0, 1);
  const payload = "x".repeat(options.payload ?? 100);
  await write(headerLine());
  for (let t = 0; t < options.threads; t++) {
    const threadId = `${options.prefix ?? "synthetic"}-${t}`;
    await write(threadLine(threadId));
    const counts = { checkpoints: 0, blobs: 0, writes: 0 };
    let parent: string | null = null;
    for (let i = 0; i < options.checkpoints; i++) {
      const id = `1ef00000-0000-6000-8000-${String(i).padStart(12, "0")}`;
      const version = `${String(i + 1).padStart(32, "0")}.${"1".repeat(16)}`;
      const [type, bytes] = await serde.dumpsTyped({
        v: 4,
        id,
        ts: new Date(base + i * 1000).toISOString(),
        channel_versions: { messages: version },
        versions_seen: { agent: { messages: version } },
      });
      const [valueType, value] = await serde.dumpsTyped({ text: `${threadId} step ${i} ${payload}` });
      const records: TransferRecord[] = [
        { kind: "blob", ns: "", channel: "messages", version, type: valueType, value },
        {
          kind: "checkpoint",
          ns: "",
          checkpointId: id,
          parentCheckpointId: parent,
          createdAt: base + i * 1000,
          type,
          checkpoint: bytes,
          channelVersions: { messages: version },
          metadata: { source: "loop", step: i, parents: {}, run_id: `run-${t}` },
        },
        {
          kind: "write",
          ns: "",
          checkpointId: id,
          taskId: `task-${i}`,
          idx: 0,
          channel: "messages",
          type: valueType,
          value,
          taskPath: "",
        },
      ];
      for (const record of records) await write(recordLine(record));
      counts.checkpoints++;
      counts.blobs++;
      counts.writes++;
      parent = id;
    }
    await write(endLine(threadId, counts));
  }
  await write(footerLine(options.threads));
  out.end();
  await once(out, "close");
}

/** Opens savers on fresh databases for one test file; they are closed when the file ends. */
export function freshTargets(): (dialect: DialectName) => ReturnType<typeof freshSaver> {
  const savers: DrizzleSaver[] = [];
  afterAll(async () => {
    for (const saver of savers) await saver.close();
  });
  return async (dialect) => {
    const fresh = await freshSaver(dialect);
    savers.push(fresh.saver);
    return fresh;
  };
}

/** The ids of the threads a saver holds, sorted. */
export async function threadIds(saver: DrizzleSaver): Promise<string[]> {
  const ids: string[] = [];
  for await (const thread of saver.listThreads()) ids.push(thread.threadId);
  return ids.sort();
}
