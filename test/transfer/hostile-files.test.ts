/**
 * Files an import should refuse without hanging or crashing: a device with no newline
 * (/dev/zero), a line of deeply nested brackets or of many arrays side by side well
 * within the line bound, a time that is not ISO 8601, a row given twice with different
 * contents. And what
 * an export leaves when it does not finish: nothing at its path, and a file it was to
 * replace (--force) as it was.
 */
import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exportThreads, InvalidInputError, importThreads } from "../../src/index.js";
import { MAX_LINE_CONTAINERS } from "../../src/transfer/format.js";
import { freshTargets, runCli, threadIds, writeSyntheticFile } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "lgcd-hostile-"));
const path = (name: string) => join(dir, name);
const target = freshTargets();

describe("an import from a file that is no transfer file", () => {
  it("refuses /dev/zero at once, as a path and as a stream, writing nothing", { timeout: 60_000 }, async () => {
    const { saver, url } = await target("sqlite");
    await expect(importThreads(url, { file: "/dev/zero" })).rejects.toThrow(InvalidInputError);
    await expect(importThreads(url, { file: "/dev/zero" })).rejects.toThrow(/^line 1: not a transfer file/);
    const stream = createReadStream("/dev/zero");
    await expect(importThreads(url, { file: stream })).rejects.toThrow(/^line 1: not a transfer file/);
    stream.destroy();
    expect(await threadIds(saver)).toEqual([]);
  });
});

// 8 to 12 MB of brackets, far below the line bound, that JSON.parse would turn into hundreds of megabytes.
const DEPTH = 4_000_000;
const ARRAYS = 4_000_000;
const BRACKETS: [string, string, string, string][] = [
  ["nested deeply", "deep", `${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`, "value nested deeper than 1001 levels"],
  [
    "of many arrays side by side",
    "wide",
    `[${"[],".repeat(ARRAYS - 1)}[]]`,
    `value holding more than ${MAX_LINE_CONTAINERS} arrays and objects`,
  ],
];

describe.each(BRACKETS)("a line %s", (_, prefix, extra, message) => {
  it("fails its thread without parsing it; the process does not run out of memory", { timeout: 120_000 }, async () => {
    const file = path(`${prefix}.jsonl`);
    await writeSyntheticFile(file, { threads: 3, checkpoints: 2, prefix });
    const lines = readFileSync(file, "utf8").split("\n");
    const bad = lines.findIndex((line) => line.includes(`"thread_id":"${prefix}-1"`)) + 2;
    lines[bad] = `${lines[bad].slice(0, -1)},"extra":${extra}}`;
    writeFileSync(file, lines.join("\n"));
    const { saver, url } = await target("sqlite");

    const cli = await runCli(["import", "--url", url, "--file", file], undefined, ["--max-old-space-size=128"]);
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.stdout).toContain(`failed: thread "${prefix}-1": line ${bad + 1}: ${message}`);
    expect(cli.stderr).toBe("error: 1 thread failed\n");
    expect(await threadIds(saver)).toEqual([`${prefix}-0`, `${prefix}-2`]);
  });
});

describe("a row given twice", () => {
  it("fails its thread when the second differs; an identical repeat is imported once", {
    timeout: 60_000,
  }, async () => {
    const file = path("twice.jsonl");
    await writeSyntheticFile(file, { threads: 2, checkpoints: 2, prefix: "twice" });
    const lines = readFileSync(file, "utf8").split("\n");
    const blobLines = (thread: string) => {
      const start = lines.findIndex((line) => line.includes(`"thread_id":"${thread}"`));
      return [start + 1, start + 4]; // the blobs of its first and second checkpoints
    };
    const repeat = (thread: string, copy: string) => {
      const end = lines.findIndex((line) => line.startsWith(`{"kind":"end","thread_id":"${thread}"`));
      lines[end] = lines[end].replace('"blobs":2', '"blobs":3');
      lines.splice(end, 0, copy);
    };
    // twice-0: the first blob again as it was. twice-1: the first blob's row with the second's value.
    const [same] = blobLines("twice-0");
    repeat("twice-0", lines[same]);
    const [first, second] = blobLines("twice-1");
    const otherValue = JSON.parse(lines[second]).value;
    repeat("twice-1", JSON.stringify({ ...JSON.parse(lines[first]), value: otherValue }));
    writeFileSync(file, lines.join("\n"));
    const { saver, url } = await target("sqlite");

    const cli = await runCli(["import", "--url", url, "--file", file]);
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.stdout).toContain(
      'failed: thread "twice-1": the value of channel "messages" at version "00000000000000000000000000000001.1111111111111111" (namespace "") is given twice, with different contents',
    );
    expect(await threadIds(saver)).toEqual(["twice-0"]);
    const history = [];
    for await (const tuple of saver.list({ configurable: { thread_id: "twice-0" } })) history.push(tuple);
    expect(history.map((tuple) => tuple.checkpoint.channel_values.messages)).toEqual([
      { text: `twice-0 step 1 ${"x".repeat(100)}` },
      { text: `twice-0 step 0 ${"x".repeat(100)}` },
    ]);
  });
});

describe("a thread given twice", () => {
  it("the second fails, with and without --replace: the first is kept whole, nothing replaced silently", {
    timeout: 60_000,
  }, async () => {
    const file = path("thread-twice.jsonl");
    await writeSyntheticFile(file, { threads: 3, checkpoints: 2, prefix: "again" });
    const lines = readFileSync(file, "utf8").split("\n");
    // again-2 renamed again-0: the file holds again-0 twice, the second time with other values.
    const renamed = lines.map((line) => line.replaceAll('"thread_id":"again-2"', '"thread_id":"again-0"'));
    const second = renamed.findLastIndex((line) => line.startsWith('{"kind":"thread","thread_id":"again-0"'));
    writeFileSync(file, renamed.join("\n"));
    for (const flags of [[], ["--replace", "--yes"]]) {
      const { saver, url } = await target("sqlite");
      const cli = await runCli(["import", "--url", url, "--file", file, ...flags]);
      expect(cli.code, cli.stderr).toBe(1);
      expect(cli.stdout).toContain(
        `failed: thread "again-0": line ${second + 1}: thread "again-0" is given a second time (first at line 2); a file gives a thread once`,
      );
      expect(await threadIds(saver)).toEqual(["again-0", "again-1"]);
      const history = [];
      for await (const tuple of saver.list({ configurable: { thread_id: "again-0" } })) history.push(tuple);
      expect(history.map((tuple) => tuple.checkpoint.channel_values.messages)).toEqual([
        { text: `again-0 step 1 ${"x".repeat(100)}` },
        { text: `again-0 step 0 ${"x".repeat(100)}` },
      ]);
    }
  });
});

describe("a time that is not ISO 8601", () => {
  it('fails its thread, where Date.parse would have made 2001-01-01 of "1"', async () => {
    const file = path("times.jsonl");
    await writeSyntheticFile(file, { threads: 3, checkpoints: 2, prefix: "time" });
    const lines = readFileSync(file, "utf8").split("\n");
    const bad = lines.findIndex((line) => line.includes('"thread_id":"time-1"')) + 2;
    expect(lines[bad]).toContain('"kind":"checkpoint"');
    lines[bad] = lines[bad].replace(/"created_at":"[^"]*"/, '"created_at":"1"');
    writeFileSync(file, lines.join("\n"));
    const { saver, url } = await target("sqlite");
    const summary = await importThreads(url, { file });
    expect(summary.failed).toEqual([{ threadId: "time-1", error: `line ${bad + 1}: "created_at" is not a date: "1"` }]);
    expect(await threadIds(saver)).toEqual(["time-0", "time-2"]);
  });
});

describe("an export that does not finish", () => {
  const leftovers = (folder: string) => readdirSync(folder).filter((name) => name.endsWith(".tmp"));

  it("leaves no file when its source fails, and keeps the file --force was to replace", async () => {
    const whole = path("whole.jsonl");
    await writeSyntheticFile(whole, { threads: 3, checkpoints: 3, prefix: "cut" });
    const text = readFileSync(whole, "utf8");
    // A transfer file is a source too: this one ends without its footer, so the export fails.
    const cut = path("cut.jsonl");
    writeFileSync(cut, text.slice(0, text.lastIndexOf('{"kind":"footer"')));
    const out = mkdtempSync(join(dir, "out-"));

    await expect(exportThreads({ file: cut }, join(out, "new.jsonl"), { overwrite: false })).rejects.toThrow(
      /ends without its footer/,
    );
    expect(existsSync(join(out, "new.jsonl"))).toBe(false);

    writeFileSync(join(out, "old.jsonl"), "precious", { mode: 0o640 });
    await expect(exportThreads({ file: cut }, join(out, "old.jsonl"), { overwrite: true })).rejects.toThrow(
      /ends without its footer/,
    );
    expect(readFileSync(join(out, "old.jsonl"), "utf8")).toBe("precious");
    expect(leftovers(out)).toEqual([]);

    // Finished, it replaces the file, keeping its mode; a new file is 0600.
    await exportThreads({ file: whole }, join(out, "old.jsonl"), { overwrite: true });
    expect(readFileSync(join(out, "old.jsonl"), "utf8")).toBe(text);
    expect(statSync(join(out, "old.jsonl")).mode & 0o777).toBe(0o640);
    await exportThreads({ file: whole }, join(out, "new.jsonl"), { overwrite: false });
    expect(statSync(join(out, "new.jsonl")).mode & 0o777).toBe(0o600);
    expect(leftovers(out)).toEqual([]);
  });

  it("interrupted (SIGINT) on the command line: no file, or the replaced one as it was", {
    timeout: 180_000,
  }, async () => {
    const file = path("many.jsonl");
    await writeSyntheticFile(file, { threads: 4, checkpoints: 1500, prefix: "many", payload: 2000 });
    const { url } = await target("sqlite");
    expect(await importThreads(url, { file })).toMatchObject({ imported: 4, failed: [] });

    for (const force of [false, true]) {
      const out = mkdtempSync(join(dir, "interrupted-"));
      const to = join(out, "threads.jsonl");
      if (force) writeFileSync(to, "precious");
      const run = runCli(["export", "--url", url, "--out", to, ...(force ? ["--force"] : [])]);
      // Once the export has written something (at its path or beside it), interrupt it.
      const started = Date.now();
      const written = () =>
        readdirSync(out).some((name) => statSync(join(out, name)).size > (name === "threads.jsonl" && force ? 8 : 0));
      while (!written() && Date.now() - started < 60_000) await new Promise((r) => setTimeout(r, 10));
      run.child.kill("SIGINT");
      const result = await run;
      expect(result.code, result.stderr).toBe(130);
      expect(readdirSync(out)).toEqual(force ? ["threads.jsonl"] : []);
      if (force) expect(readFileSync(to, "utf8")).toBe("precious");
    }
  });
});
