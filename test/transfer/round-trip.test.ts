import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver, exportThreads, importThreads } from "../../src/index.js";
import { freshSaver } from "../helpers/databases.js";
import { expectSameStates, graphsOver, type Scenario, THREADS, writeScenario } from "./scenario.js";
import { readText, runCli, threadsOfFile } from "./support.js";

/**
 * Threads written by our saver on SQLite travel to PostgreSQL and MariaDB through an
 * export file (with the CLI) and straight from database to database, and back to a
 * new SQLite file: every copy exports the same rows and reads the same states.
 */

const dir = mkdtempSync(join(tmpdir(), "lgcd-transfer-"));
const file = (name: string) => join(dir, name);
const saversToClose: DrizzleSaver[] = [];

async function target(dialect: "sqlite" | "postgres" | "mysql") {
  const fresh = await freshSaver(dialect);
  saversToClose.push(fresh.saver);
  return fresh;
}

let origin: { saver: DrizzleSaver; url: string };
let scenario: Scenario;
let originalFile: Record<string, string[]>;

beforeAll(async () => {
  origin = await target("sqlite");
  scenario = await writeScenario(origin.saver, "round-trip");
  const summary = await exportThreads({ url: origin.url }, file("origin.jsonl"));
  expect(summary).toMatchObject({ threads: THREADS.length, failed: [] });
  originalFile = threadsOfFile(readText(file("origin.jsonl")));
});

afterAll(async () => {
  for (const saver of saversToClose) await saver.close();
});

describe("moving our threads to another database", () => {
  it("exports every thread with its checkpoints, blobs and pending writes", () => {
    expect(Object.keys(originalFile)).toHaveLength(THREADS.length);
    const kinds = Object.values(originalFile)
      .flat()
      .map((line) => (JSON.parse(line) as { kind: string }).kind);
    for (const kind of ["checkpoint", "blob", "write", "end"]) expect(kinds).toContain(kind);
    // Growing message lists are stored as incremental values: their chains travel with them.
    const chains = Object.values(originalFile)
      .flat()
      .filter((line) => (JSON.parse(line) as { delta_chain?: string }).delta_chain !== undefined);
    expect(chains.length).toBeGreaterThan(0);
  });

  it.each(["postgres", "mysql"] as const)(
    "SQLite → file → %s with the CLI, and back to SQLite directly",
    { timeout: 180_000 },
    async (dialect) => {
      const copy = await target(dialect);
      const imported = await runCli(["import", "--url", copy.url, "--file", file("origin.jsonl"), "--json"]);
      expect(imported.stderr).toBe("");
      expect(imported.code).toBe(0);
      expect(JSON.parse(imported.stdout)).toMatchObject({ imported: THREADS.length, failed: [] });
      await expectSameStates(graphsOver(origin.saver), graphsOver(copy.saver), scenario);

      // Its export (through stdout) holds the same rows, created_at included.
      const exported = await runCli(["export", "--url", copy.url]);
      expect(exported.code).toBe(0);
      expect(threadsOfFile(exported.stdout)).toEqual(originalFile);

      // Database to database, back to a new SQLite file.
      const back = await target("sqlite");
      const summary = await importThreads(back.url, { url: copy.url });
      expect(summary).toMatchObject({ imported: THREADS.length, failed: [] });
      await exportThreads({ url: back.url }, file(`back-${dialect}.jsonl`));
      expect(threadsOfFile(readText(file(`back-${dialect}.jsonl`)))).toEqual(originalFile);
      await expectSameStates(graphsOver(origin.saver), graphsOver(back.saver), scenario);
    },
  );

  describe("a mariadb:// URL, MariaDB as for mysql://, as a source too", { timeout: 180_000 }, () => {
    let url: string;
    beforeAll(async () => {
      const copy = await target("mysql");
      url = copy.url.replace(/^mysql:/, "mariadb:");
      const loaded = await importThreads(url, { file: file("origin.jsonl") });
      expect(loaded).toMatchObject({ imported: THREADS.length, failed: [] });
    });

    it("export --url and import --from with the CLI", async () => {
      const exported = await runCli(["export", "--url", url]);
      expect(exported.code, exported.stderr).toBe(0);
      expect(threadsOfFile(exported.stdout)).toEqual(originalFile);

      const copy = await target("sqlite");
      const imported = await runCli(["import", "--url", copy.url, "--from", url, "--json"]);
      expect(imported.code, imported.stderr).toBe(0);
      expect(JSON.parse(imported.stdout)).toMatchObject({ imported: THREADS.length, failed: [] });
      await expectSameStates(graphsOver(origin.saver), graphsOver(copy.saver), scenario);
    });

    it("exportThreads and importThreads with the URL as the source", async () => {
      const summary = await exportThreads({ url }, file("mariadb.jsonl"));
      expect(summary).toMatchObject({ threads: THREADS.length, failed: [] });
      expect(threadsOfFile(readText(file("mariadb.jsonl")))).toEqual(originalFile);

      const copy = await target("sqlite");
      expect(await importThreads(copy.url, { url })).toMatchObject({ imported: THREADS.length, failed: [] });
      await expectSameStates(graphsOver(origin.saver), graphsOver(copy.saver), scenario);
    });
  });

  it("a file: URL names the same SQLite file as a source as it does for fromUrl", async () => {
    // A space in the name is %20 in the URL; the query is not part of the name.
    const path = join(mkdtempSync(join(tmpdir(), "lgcd-transfer-")), "my db.db");
    const saver = await DrizzleSaver.fromUrl(path);
    saversToClose.push(saver);
    await saver.setup();
    await importThreads(path, { file: file("origin.jsonl") });
    const url = `${pathToFileURL(path).href}?mode=ro`;
    expect(url).toContain("my%20db.db?");

    const summary = await exportThreads({ url }, file("file-url.jsonl"));
    expect(summary).toMatchObject({ threads: THREADS.length, failed: [] });
    expect(threadsOfFile(readText(file("file-url.jsonl")))).toEqual(originalFile);
    const exported = await runCli(["export", "--url", url]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(threadsOfFile(exported.stdout)).toEqual(originalFile);
  });

  it("exports only the named threads, or those with a checkpoint matching a filter", async () => {
    const named = String(scenario.chat.configurable?.thread_id);
    const one = await runCli(["export", "--url", origin.url, "--thread", named, "--out", file("one.jsonl"), "--json"]);
    expect(one.code).toBe(0);
    expect(Object.keys(threadsOfFile(readText(file("one.jsonl"))))).toEqual([named]);
    // Every thread starts with an input checkpoint at step -1; none has source "nothing".
    const filtered = await exportThreads({ url: origin.url, filter: { step: -1, source: "input" } }, file("f.jsonl"));
    expect(filtered.threads).toBe(THREADS.length);
    const none = await exportThreads({ url: origin.url, filter: { source: "nothing" } }, file("none.jsonl"));
    expect(none.threads).toBe(0);
  });

  it("counts without writing in a dry run, then skips threads already imported with the same content", async () => {
    const copy = await target("sqlite");
    const dry = await importThreads(copy.url, { file: file("origin.jsonl") }, { dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, imported: THREADS.length, failed: [] });
    expect(dry.checkpoints).toBeGreaterThan(THREADS.length);
    expect(await copy.saver.list({}).next()).toMatchObject({ done: true });

    const first = await importThreads(copy.url, { file: file("origin.jsonl") });
    expect(first).toMatchObject({ imported: THREADS.length, checkpoints: dry.checkpoints, blobs: dry.blobs });
    const second = await importThreads(copy.url, { file: file("origin.jsonl") });
    expect(second).toMatchObject({ imported: 0, unchanged: THREADS.length, failed: [] });
  });
});
