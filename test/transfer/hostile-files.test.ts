/**
 * Files an import should refuse without hanging or crashing: a device with no newline
 * (/dev/zero), a line of deeply nested brackets well within the line bound.
 */
import { createReadStream, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InvalidInputError, importThreads } from "../../src/index.js";
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

describe("a line nested deeply", () => {
  it("fails its thread without parsing it; the process does not run out of memory", { timeout: 120_000 }, async () => {
    const file = path("deep.jsonl");
    await writeSyntheticFile(file, { threads: 3, checkpoints: 2, prefix: "deep" });
    const lines = readFileSync(file, "utf8").split("\n");
    const bad = lines.findIndex((line) => line.includes('"thread_id":"deep-1"')) + 2;
    // 8 MB of brackets, far below the line bound, that JSON.parse would turn into hundreds of megabytes.
    const depth = 4_000_000;
    lines[bad] = `${lines[bad].slice(0, -1)},"extra":${"[".repeat(depth)}${"]".repeat(depth)}}`;
    writeFileSync(file, lines.join("\n"));
    const { saver, url } = await target("sqlite");

    const cli = await runCli(["import", "--url", url, "--file", file], undefined, ["--max-old-space-size=128"]);
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.stdout).toContain(`failed: thread "deep-1": line ${bad + 1}: value nested deeper than 1001 levels`);
    expect(cli.stderr).toBe("error: 1 thread failed\n");
    expect(await threadIds(saver)).toEqual(["deep-0", "deep-2"]);
  });
});
