/** Files an import should refuse without hanging or crashing: a device with no newline (/dev/zero). */
import { createReadStream } from "node:fs";
import { describe, expect, it } from "vitest";
import { InvalidInputError, importThreads } from "../../src/index.js";
import { freshTargets, threadIds } from "./support.js";

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
