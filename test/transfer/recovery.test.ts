import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { exportThreads, InvalidInputError, importThreads } from "../../src/index.js";
import { buildChatGraph, CHAT_TURNS, newThread } from "../graphs/graphs.js";
import { DIALECTS, type DialectName } from "../helpers/databases.js";
import { openRaw } from "../lifecycle/support.js";
import { freshTargets, readText, runCli, threadIds, threadsOfFile, writeSyntheticFile } from "./support.js";

/**
 * Imports that are killed, fed damaged input or meet threads already present: each
 * thread ends whole or absent, never half written, and a second run completes.
 */

const dir = mkdtempSync(join(tmpdir(), "lgcd-recovery-"));
const path = (name: string) => join(dir, name);
const target = freshTargets();

/** Rows of every table under a staging thread id (see src/transfer/target.ts). */
async function stagedRows(dialect: DialectName, url: string): Promise<number> {
  const raw = await openRaw(dialect, url);
  try {
    let rows = 0;
    for (const table of ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]) {
      const [row] = await raw.query(`select count(*) as n from ${table} where thread_id like ?`, [
        "__transfer_staging__%",
      ]);
      rows += Number(row.n);
    }
    return rows;
  } finally {
    await raw.close();
  }
}

async function exported(url: string, name: string): Promise<Record<string, string[]>> {
  await exportThreads({ url }, path(name));
  return threadsOfFile(readText(path(name)));
}

describe.each(DIALECTS)("a killed import on %s", (dialect) => {
  it("leaves no thread half written, and a second run ends with every thread whole", { timeout: 180_000 }, async () => {
    const file = path(`kill-${dialect}.jsonl`);
    await writeSyntheticFile(file, { threads: 3, checkpoints: 300, prefix: `kill-${dialect}` });
    const expected = threadsOfFile(readText(file));
    const { url } = await target(dialect);

    const run = runCli(["import", "--url", url, "--file", file, "--no-progress"]);
    // Killed as soon as a thread is being written (its rows are staged under another id).
    let staged = false;
    while (!staged) {
      // Staged rows are no thread: listThreads never shows them (finding 6), the tables do.
      staged = (await stagedRows(dialect, url)) > 0;
      if (!staged) {
        if (run.child.exitCode !== null)
          throw new Error(`the import ended before it was killed: ${(await run).stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    run.child.kill("SIGKILL");
    expect((await run).code).toBe(null);

    const visible = (await exported(url, `kill-${dialect}-after.jsonl`)) as Record<string, string[]>;
    const whole = Object.keys(visible).filter((id) => !id.startsWith("__transfer_staging__:"));
    expect(whole.length).toBeLessThan(3);
    for (const id of whole) expect(visible[id], `thread ${id} after the kill`).toEqual(expected[id]);

    const second = await runCli(["import", "--url", url, "--file", file, "--json"]);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({
      imported: 3 - whole.length,
      unchanged: whole.length,
      failed: [],
    });
    expect(await exported(url, `kill-${dialect}-final.jsonl`)).toEqual(expected);
  });
});

describe.each(DIALECTS)("two imports of one thread at once on %s", (dialect) => {
  it("leave the thread as one of them wrote it, never a mix of both, and no staged rows", {
    timeout: 180_000,
  }, async () => {
    // The same thread id, checkpoint ids and versions in both files; other values.
    const files = [path(`race-a-${dialect}.jsonl`), path(`race-b-${dialect}.jsonl`)];
    await writeSyntheticFile(files[0], { threads: 1, checkpoints: 300, prefix: `race-${dialect}`, payload: 100 });
    await writeSyntheticFile(files[1], { threads: 1, checkpoints: 300, prefix: `race-${dialect}`, payload: 101 });
    const threadId = `race-${dialect}-0`;
    const contents = files.map((file) => threadsOfFile(readText(file))[threadId]);
    const { url } = await target(dialect);

    for (const round of [1, 2]) {
      const summaries = await Promise.all(files.map((file) => importThreads(url, { file }, { replace: true })));
      const final = (await exported(url, `race-${dialect}-${round}.jsonl`))[threadId];
      expect(contents, `round ${round}: the thread is one file's content`).toContainEqual(final);
      expect(await stagedRows(dialect, url), `round ${round}: rows left in staging`).toBe(0);
      for (const summary of summaries) {
        // Each run wrote the thread, found it in place, or failed naming the other import.
        expect(summary.imported + summary.replaced + summary.unchanged + summary.failed.length).toBe(1);
        for (const { error } of summary.failed) expect(error).toMatch(/another import of thread/);
      }
    }
  });
});

describe("damaged input", () => {
  it("imports the threads before a truncation and names the line where the file ends", async () => {
    const file = path("whole.jsonl");
    await writeSyntheticFile(file, { threads: 3, checkpoints: 5, prefix: "cut" });
    const lines = readFileSync(file, "utf8").split("\n");
    const secondThread = lines.findIndex((line) => line.includes('"thread_id":"cut-1"'));
    // Cut in the middle of a line of the second thread.
    writeFileSync(
      path("cut.jsonl"),
      `${lines.slice(0, secondThread + 4).join("\n")}\n${lines[secondThread + 4].slice(0, 30)}`,
    );
    const { saver, url } = await target("sqlite");

    const summary = await importThreads(url, { file: path("cut.jsonl") });
    expect(summary.imported).toBe(1);
    expect(summary.failed).toEqual([
      { threadId: "cut-1", error: `line ${secondThread + 5}: not a JSON document (is the file truncated?)` },
    ]);
    expect(summary.sourceError).toMatch(/ends without its footer line/);
    expect(await threadIds(saver)).toEqual(["cut-0"]);

    const cli = await runCli(["import", "--url", url, "--file", "-"], lines.slice(0, secondThread + 3).join("\n"));
    expect(cli.code).toBe(1);
    expect(cli.stdout).toContain(
      `failed: thread "cut-1": line ${secondThread + 3}: the file ends inside thread "cut-1"`,
    );
    expect(await threadIds(saver)).toEqual(["cut-0"]);
  });

  it("fails only the thread with a damaged line, naming the line, and writes nothing of it", async () => {
    const file = path("damaged.jsonl");
    await writeSyntheticFile(file, { threads: 3, checkpoints: 5, prefix: "damaged" });
    const lines = readFileSync(file, "utf8").split("\n");
    const bad = lines.findIndex((line) => line.includes('"thread_id":"damaged-1"')) + 3;
    lines[bad] = lines[bad].replace(/"value":"[^"]*"/, '"value":"not base64!"');
    writeFileSync(file, lines.join("\n"));
    const { saver, url } = await target("sqlite");

    const summary = await importThreads(url, { file });
    expect(summary.imported).toBe(2);
    expect(summary.sourceError).toBeUndefined();
    expect(summary.failed).toEqual([{ threadId: "damaged-1", error: `line ${bad + 1}: "value" is not base64` }]);
    expect(await threadIds(saver)).toEqual(["damaged-0", "damaged-2"]);
  });

  it("imports only the named threads of a file and reports the named ones it lacks", async () => {
    const file = path("named.jsonl");
    await writeSyntheticFile(file, { threads: 3, checkpoints: 2, prefix: "named" });
    const { saver, url } = await target("sqlite");
    const summary = await importThreads(url, { file, threadIds: ["named-2", "absent"] });
    expect(summary).toMatchObject({ imported: 1, failed: [{ threadId: "absent", error: "not found in the source" }] });
    expect(await threadIds(saver)).toEqual(["named-2"]);
    const usage = await runCli(["import", "--url", url, "--file", file, "--from", url]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("exactly one of --from <url> and --file <path>");
  });

  it("refuses a file that is not a transfer file before reading anything", async () => {
    writeFileSync(path("other.jsonl"), '{"hello":"world"}\n');
    const { url } = await target("sqlite");
    await expect(importThreads(url, { file: path("other.jsonl") })).rejects.toThrow(InvalidInputError);
    await expect(importThreads(url, { file: path("other.jsonl") })).rejects.toThrow(/line 1: .*not a transfer file/);
  });

  it("names the official saver's row its serializer cannot read, and writes nothing of that thread", async () => {
    const officialPath = path("official.db");
    const official = SqliteSaver.fromConnString(officialPath);
    const graph = buildChatGraph(official);
    const good = newThread("readable");
    const broken = newThread("unreadable");
    for (const config of [good, broken]) await graph.invoke({ messages: [CHAT_TURNS[0]] }, config);
    official.db.close();
    const db = new Database(officialPath);
    const { checkpoint_id: badId } = db
      .prepare("select checkpoint_id from checkpoints where thread_id = ? order by checkpoint_id limit 1 offset 1")
      .get(broken.configurable.thread_id) as { checkpoint_id: string };
    db.prepare("update checkpoints set checkpoint = ? where checkpoint_id = ?").run(Buffer.from("{not json"), badId);
    db.close();
    const { saver, url } = await target("postgres");

    const summary = await importThreads(url, { url: officialPath });
    expect(summary.imported).toBe(1);
    expect(summary.failed).toHaveLength(1);
    expect(summary.failed[0].threadId).toBe(broken.configurable.thread_id);
    expect(summary.failed[0].error).toContain(
      `checkpoints row (thread_id "${broken.configurable.thread_id}", checkpoint_ns "", checkpoint_id "${badId}")`,
    );
    expect(await threadIds(saver)).toEqual([good.configurable.thread_id]);
  });
});

describe.each(DIALECTS)("threads that already exist in the target on %s", (dialect) => {
  // The same checkpoint ids and versions in both files (the first four), other values.
  it("are an error for that thread unless replaced; the other threads go on", async () => {
    const [v1, v2] = [path(`v1-${dialect}.jsonl`), path(`v2-${dialect}.jsonl`)];
    await writeSyntheticFile(v1, { threads: 2, checkpoints: 4, prefix: "exists" });
    await writeSyntheticFile(v2, { threads: 3, checkpoints: 6, prefix: "exists", payload: 7 });
    const { url } = await target(dialect);
    await importThreads(url, { file: v1 });
    const before = await exported(url, `exists-before-${dialect}.jsonl`);

    const refused = await importThreads(url, { file: v2 });
    expect(refused.imported).toBe(1);
    expect(refused.failed.map((f) => f.threadId)).toEqual(["exists-0", "exists-1"]);
    expect(refused.failed[0].error).toMatch(/already exists with other content .*--replace/);
    const after = await exported(url, `exists-after-${dialect}.jsonl`);
    expect(after["exists-0"]).toEqual(before["exists-0"]);

    // --yes: replacing asks first, and no one can answer here (test/cli/transfer.test.ts).
    const replaced = await runCli(["import", "--url", url, "--file", v2, "--replace", "--yes"]);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stdout).toContain("imported 0 threads, replaced 2, unchanged 1");
    expect(await exported(url, `exists-final-${dialect}.jsonl`)).toEqual(threadsOfFile(readText(v2)));
  });
});
