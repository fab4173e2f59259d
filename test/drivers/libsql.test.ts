import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { isInterrupted } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { openApp } from "./fixtures/approval.js";

const run = promisify(execFile);

describe("a libSQL application (local file, asynchronous transactions)", () => {
  it("runs a graph to an interrupt; a second process reads the file, resumes it, and the first sees the result", async () => {
    const url = `file:${join(mkdtempSync(join(tmpdir(), "lgcd-libsql-app-")), "app.db")}`;
    const app = openApp(url);
    try {
      expect((await app.saver.setup()).length).toBeGreaterThan(0);
      const config = { configurable: { thread_id: "order-1" } };
      const first = await app.graph.invoke({ request: "the post" }, config);
      expect(isInterrupted(first)).toBe(true);
      const paused = await app.graph.getState(config);
      expect(paused.next).toEqual(["review"]);

      const { stdout } = await run(process.execPath, [
        "--import",
        "tsx",
        "test/drivers/fixtures/libsql-resume.ts",
        url,
        "order-1",
      ]);
      const second = JSON.parse(stdout) as {
        pausedAt: string[];
        valuesBefore: unknown;
        valuesAfter: unknown;
        next: string[];
      };
      // The other process saw exactly the paused state this one wrote...
      expect(second.pausedAt).toEqual(["review"]);
      expect(second.valuesBefore).toEqual(paused.values);
      // ... finished the run, and this process reads what it wrote.
      expect(second.next).toEqual([]);
      const done = await app.graph.getState(config);
      expect(done.values).toEqual(second.valuesAfter);
      expect(done.values.log).toEqual([
        `drafted the post in ${process.pid}`,
        expect.stringMatching(/^reviewed: yes in \d+$/),
        expect.stringMatching(/^published in \d+$/),
      ]);
      expect(done.values.log[1]).not.toBe(`reviewed: yes in ${process.pid}`);
    } finally {
      app.client.close();
    }
  });
});
