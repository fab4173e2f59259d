import { existsSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { cli, cliHead, ensureBuilt, expectOneLineError, journalTags, jsonLines, rawQuery } from "./helpers.js";
import { type Seeded, seededMetadata, seedGraphThreads, seedMetadataThread, seedNamespaces } from "./seed.js";

interface HistoryLine {
  threadId: string;
  ns: string;
  checkpointId: string;
  parentCheckpointId: string | null;
  source: string;
  step: number;
  time: string;
  changed: string[];
  metadata: Record<string, unknown>;
}

interface ThreadLine {
  threadId: string;
  checkpoints: number;
  latestCheckpointId: string | null;
  createdAt: string;
  updatedAt: string;
  metadata: Record<string, unknown> | null;
}

interface ShowDocument {
  threadId: string;
  checkpointId: string;
  parentCheckpointId: string | null;
  time: string;
  metadata: Record<string, unknown>;
  values: Record<string, unknown>;
  pendingWrites: { taskId: string; channel: string; value: unknown }[];
}

const ids = (lines: { checkpointId: string }[]) => lines.map((line) => line.checkpointId);

/** Every command of the binary against one database system. */
export function describeCli(dialect: DialectName): void {
  // Each test runs the binary several times; the machine may be busy.
  describe(`the CLI on ${dialect}`, { timeout: 300_000 }, () => {
    beforeAll(async () => {
      await ensureBuilt();
    }, 15 * 60_000);

    describe("migrate and status", () => {
      let url: string;
      beforeAll(async () => {
        url = await freshDatabaseUrl(dialect);
      });

      it("lists pending migrations with --dry-run and changes nothing", async () => {
        const human = await cli(["migrate", "--url", url, "--dry-run"]);
        expect(human.code, human.stderr).toBe(0);
        expect(human.stdout).toContain("pending migration");
        for (const tag of journalTags(dialect)) expect(human.stdout).toContain(tag);

        const json = await cli(["migrate", "--url", url, "--dry-run", "--json"]);
        expect(json.code, json.stderr).toBe(0);
        const [plan] = jsonLines<{ applied: { tag: string }[]; pending: { tag: string }[] }>(json.stdout);
        expect(plan.applied).toEqual([]);
        expect(plan.pending.map((m) => m.tag)).toEqual(journalTags(dialect));

        // A dry run creates no SQLite file and applies nothing.
        if (dialect === "sqlite") expect(existsSync(url)).toBe(false);
        else {
          const saver = await DrizzleSaver.fromUrl(url);
          try {
            expect((await saver.migrationStatus()).applied).toEqual([]);
          } finally {
            await saver.close();
          }
        }
      });

      it("status before the first migration shows everything pending and no tables", async () => {
        if (dialect === "sqlite") {
          // status never creates a database file.
          expectOneLineError(await cli(["status", "--url", url]), 1, /no SQLite database at .*migrate/);
          return;
        }
        const result = await cli(["status", "--url", url, "--json"]);
        expect(result.code, result.stderr).toBe(0);
        const [doc] = jsonLines<{ migrations: { tag: string; state: string }[]; tables: unknown[] }>(result.stdout);
        expect(doc.migrations.map((m) => [m.tag, m.state])).toEqual(journalTags(dialect).map((t) => [t, "pending"]));
        expect(doc.tables).toEqual([]);
      });

      it("a command that needs the tables says to migrate first", async () => {
        // SQLite: a database file that exists, without our tables.
        if (dialect === "sqlite") await rawQuery(dialect, url, "create table unrelated (x integer)");
        expectOneLineError(await cli(["threads", "--url", url]), 1, /run the migrate command first/);
        expectOneLineError(
          await cli(["history", "--url", url, "--thread", "t"]),
          1,
          /no checkpoint tables yet: run the migrate command first/,
        );
        const status = await cli(["status", "--url", url]);
        expect(status.code, status.stderr).toBe(0);
        expect(status.stdout).toContain(`0 applied, ${journalTags(dialect).length} pending`);
        expect(status.stdout).toContain("no checkpoint tables yet: run the migrate command");
      });

      it("applies the migrations, then reports the database up to date", async () => {
        const first = await cli(["migrate", "--url", url]);
        expect(first.code, first.stderr).toBe(0);
        for (const tag of journalTags(dialect)) expect(first.stdout).toContain(`applied ${tag}`);
        expect(first.stdout).toContain("up to date");

        const second = await cli(["migrate", "--url", url]);
        expect(second.code, second.stderr).toBe(0);
        expect(second.stdout).not.toContain("applied ");
        expect(second.stdout).toContain("up to date");

        const json = await cli(["migrate", "--url", url, "--json"]);
        expect(json.code, json.stderr).toBe(0);
        const [doc] = jsonLines<{ applied: unknown[]; current: { tag: string }[] }>(json.stdout);
        expect(doc.applied).toEqual([]);
        expect(doc.current.map((m) => m.tag)).toEqual(journalTags(dialect));

        const dry = await cli(["migrate", "--url", url, "--dry-run"]);
        expect(dry.code, dry.stderr).toBe(0);
        expect(dry.stdout).toContain("no pending migrations");
      });

      it("status shows the applied migrations and the tables", async () => {
        const human = await cli(["status", "--url", url]);
        expect(human.code, human.stderr).toBe(0);
        expect(human.stdout).toContain(`${journalTags(dialect).length} applied, 0 pending`);
        for (const table of ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]) {
          expect(human.stdout).toMatch(new RegExp(`^\\s+${table}\\s+0\\s+\\d+(\\.\\d)? (B|KiB|MiB)$`, "m"));
        }

        const json = await cli(["status", "--url", url, "--json"]);
        expect(json.code, json.stderr).toBe(0);
        const [doc] = jsonLines<{
          migrations: { tag: string; state: string }[];
          tables: { table: string; rows: number; bytes: number }[];
        }>(json.stdout);
        expect(doc.migrations.map((m) => [m.tag, m.state])).toEqual(journalTags(dialect).map((t) => [t, "applied"]));
        expect(doc.tables.map((t) => t.table).sort()).toEqual(["checkpoint_blobs", "checkpoint_writes", "checkpoints"]);
        for (const table of doc.tables) {
          expect(table.rows).toBe(0);
          expect(table.bytes).toBeGreaterThanOrEqual(0);
        }
      });

      it("takes the URL from LANGGRAPH_CHECKPOINT_URL", async () => {
        const result = await cli(["status", "--json"], { env: { LANGGRAPH_CHECKPOINT_URL: url } });
        expect(result.code, result.stderr).toBe(0);
        expect(jsonLines<{ tables: unknown[] }>(result.stdout)[0].tables).toHaveLength(3);
      });
    });

    describe("threads, history and show", () => {
      let url: string;
      let seeded: Seeded;
      beforeAll(async () => {
        url = await freshDatabaseUrl(dialect);
        const migrated = await cli(["migrate", "--url", url]);
        expect(migrated.code, migrated.stderr).toBe(0);
        seeded = await seedGraphThreads(url);
        await seedMetadataThread(url, "meta", 6);
        await seedNamespaces(url, "nested", "child:1");
      });

      async function history(...args: string[]): Promise<HistoryLine[]> {
        const result = await cli(["history", "--url", url, "--json", ...args]);
        expect(result.code, result.stderr).toBe(0);
        return jsonLines<HistoryLine>(result.stdout);
      }

      it("status counts the rows", async () => {
        const result = await cli(["status", "--url", url, "--json"]);
        expect(result.code, result.stderr).toBe(0);
        const [doc] = jsonLines<{ tables: { table: string; rows: number; bytes: number }[] }>(result.stdout);
        const checkpoints = doc.tables.find((t) => t.table === "checkpoints");
        // 3 (interrupted) + 5 (finished) + 6 (meta) + 3 (nested)
        expect(checkpoints?.rows).toBe(17);
        expect(checkpoints?.bytes).toBeGreaterThan(0);
      });

      it("threads lists every thread in id order with root checkpoint counts", async () => {
        const json = await cli(["threads", "--url", url, "--json"]);
        expect(json.code, json.stderr).toBe(0);
        const threads = jsonLines<ThreadLine>(json.stdout);
        expect(threads.map((t) => [t.threadId, t.checkpoints])).toEqual([
          [seeded.finished, 5],
          [seeded.interrupted, 3],
          ["meta", 6],
          ["nested", 1], // root-0; its subgraph's two checkpoints are not counted
        ]);
        expect(threads[2].latestCheckpointId).toBe("cp-0005");
        expect(threads[2].metadata).toEqual(seededMetadata(5));
        expect(threads[3].latestCheckpointId).toBe("root-0");
        for (const thread of threads) {
          expect(new Date(thread.createdAt).toISOString()).toBe(thread.createdAt);
          expect(new Date(thread.updatedAt).toISOString()).toBe(thread.updatedAt);
          expect(thread.updatedAt >= thread.createdAt).toBe(true);
        }

        const human = await cli(["threads", "--url", url]);
        expect(human.code, human.stderr).toBe(0);
        const lines = human.stdout.trimEnd().split("\n");
        expect(lines[0]).toMatch(/^THREAD\s+CHECKPOINTS\s+LATEST CHECKPOINT\s+UPDATED AT\s+CREATED AT$/);
        expect(lines.slice(1).map((line) => line.split(/\s+/).slice(0, 3))).toEqual(
          threads.map((t) => [t.threadId, String(t.checkpoints), t.latestCheckpointId]),
        );
      });

      it("threads --limit and --filter (on each thread's newest root checkpoint)", async () => {
        const limited = await cli(["threads", "--url", url, "--json", "--limit", "1"]);
        expect(jsonLines<ThreadLine>(limited.stdout).map((t) => t.threadId)).toEqual([seeded.finished]);

        // cp-0005, meta's newest checkpoint, has user u7; older ones have u42.
        const byUser = await cli(["threads", "--url", url, "--json", "--filter", "user=u7"]);
        expect(jsonLines<ThreadLine>(byUser.stdout).map((t) => [t.threadId, t.checkpoints])).toEqual([["meta", 6]]);
        const older = await cli(["threads", "--url", url, "--json", "--filter", "user=u42"]);
        expect(jsonLines<ThreadLine>(older.stdout)).toEqual([]);

        // -1 is JSON: the number, which LangGraph gives the input checkpoint: only nested's newest root one.
        const inputs = await cli(["threads", "--url", url, "--json", "--filter", "step=-1"]);
        expect(jsonLines<ThreadLine>(inputs.stdout).map((t) => [t.threadId, t.checkpoints])).toEqual([["nested", 1]]);

        const none = await cli(["threads", "--url", url, "--filter", "user=nobody"]);
        expect(none.code, none.stderr).toBe(0);
        expect(none.stdout).toContain("no thread's newest checkpoint matches the filter");
      });

      it("threads --sort, --order, --offset and --count", async () => {
        const list = async (...args: string[]) => {
          const result = await cli(["threads", "--url", url, "--json", ...args]);
          expect(result.code, result.stderr).toBe(0);
          return jsonLines<ThreadLine>(result.stdout);
        };
        // Written in this order: the graph threads, then meta, then nested.
        const newest = await list("--sort", "updatedAt");
        expect(newest.map((t) => t.threadId).slice(0, 2)).toEqual(["nested", "meta"]);
        for (const [i, thread] of newest.slice(1).entries()) expect(thread.updatedAt <= newest[i].updatedAt).toBe(true);
        const oldest = await list("--sort", "updatedAt", "--order", "asc");
        expect(oldest.map((t) => t.threadId)).toEqual(newest.map((t) => t.threadId).reverse());
        const created = await list("--sort", "createdAt", "--limit", "2");
        expect(created.map((t) => t.threadId)).toEqual(["nested", "meta"]);
        const byIdDesc = await list("--order", "desc", "--offset", "1", "--limit", "2");
        expect(byIdDesc.map((t) => t.threadId)).toEqual(["meta", seeded.interrupted]);
        expect(await list("--offset", "4")).toEqual([]);

        const count = await cli(["threads", "--url", url, "--count"]);
        expect(count.code, count.stderr).toBe(0);
        expect(count.stdout).toBe("4\n");
        const counted = await cli(["threads", "--url", url, "--count", "--json", "--filter", "user=u7"]);
        expect(jsonLines(counted.stdout)).toEqual([{ count: 1 }]);

        expectOneLineError(
          await cli(["threads", "--url", url, "--count", "--limit", "1"]),
          2,
          /--count takes --filter only/,
        );
        expectOneLineError(await cli(["threads", "--url", url, "--sort", "newest"]), 2, /--sort/);
        expectOneLineError(await cli(["threads", "--url", url, "--offset", "-1"]), 2, /--offset/);
      });

      it("history of a graph run: newest first, parents, sources, steps, times, changed channels", async () => {
        const lines = await history("--thread", seeded.finished);
        expect(lines.map((l) => [l.source, l.step])).toEqual([
          ["loop", 3],
          ["loop", 2],
          ["loop", 1],
          ["loop", 0],
          ["input", -1],
        ]);
        lines.forEach((line, i) => {
          expect(line.threadId).toBe(seeded.finished);
          expect(line.parentCheckpointId).toBe(lines[i + 1]?.checkpointId ?? null);
          expect(new Date(line.time).toISOString()).toBe(line.time);
        });
        const changed = Object.fromEntries(lines.map((l) => [l.step, l.changed]));
        expect(changed[-1]).toEqual(["__start__"]);
        expect(changed[0]).toContain("messages");
        expect(changed[1]).toEqual(expect.arrayContaining(["messages", "count"]));
        expect(changed[2]).toContain("note");
        expect(changed[2]).not.toContain("messages");
        expect(changed[3]).toContain("seen");
        expect(changed[3]).not.toContain("note");

        const human = await cli(["history", "--url", url, "--thread", seeded.finished]);
        expect(human.code, human.stderr).toBe(0);
        const rows = human.stdout.trimEnd().split("\n");
        expect(rows[0]).toMatch(/^CHECKPOINT\s+PARENT\s+SOURCE\s+STEP\s+TIME\s+CHANGED$/);
        expect(rows).toHaveLength(6);
        expect(rows[1]).toMatch(
          new RegExp(
            `^${lines[0].checkpointId}\\s+${lines[1].checkpointId}\\s+loop\\s+3\\s+${lines[0].time}\\s+.*seen`,
          ),
        );
        expect(rows[5]).toMatch(new RegExp(`^${lines[4].checkpointId}\\s+-\\s+input\\s+-1\\s+\\S+\\s+__start__$`));
      });

      it("history --filter: a JSON value is typed, anything else is a string", async () => {
        // attempt is the number 3 on cp-0002 and the string "3" on cp-0003.
        const number = await history("--thread", "meta", "--filter", "attempt=3");
        expect(ids(number)).toEqual(["cp-0002"]);
        const string = await history("--thread", "meta", "--filter", 'attempt="3"');
        expect(ids(string)).toEqual(["cp-0003"]);
        // The parent is not in the filtered stream: the changed channels still compare with it.
        expect(string[0].changed).toEqual(["counter", "odd"]);
        expect(string[0].parentCheckpointId).toBe("cp-0002");

        const tags = await history("--thread", "meta", "--filter", 'tags=["a","b"]');
        expect(ids(tags)).toEqual(["cp-0004"]);
        expect(tags[0].metadata.tags).toEqual(["a", "b"]);

        const loop = await history("--thread", "meta", "--filter", "source=loop", "--filter", "user=u42");
        expect(ids(loop)).toEqual(["cp-0004", "cp-0003", "cp-0002", "cp-0001"]);
        // Several pairs after one --filter are the same filter.
        expect(ids(await history("--thread", "meta", "--filter", "source=loop", "user=u42"))).toEqual(ids(loop));

        const none = await cli(["history", "--url", url, "--thread", "meta", "--filter", "user=nobody"]);
        expect(none.code, none.stderr).toBe(0);
        expect(none.stdout).toBe("no checkpoints match\n");
        expect(await history("--thread", "meta", "--filter", "user=nobody")).toEqual([]);
      });

      it("history --before and --limit", async () => {
        const page = await history("--thread", "meta", "--before", "cp-0003", "--limit", "2");
        expect(ids(page)).toEqual(["cp-0002", "cp-0001"]);
        expect(page.map((l) => l.changed)).toEqual([
          ["counter", "even"],
          ["counter", "odd"],
        ]);
        expect(ids(await history("--thread", "meta", "--limit", "2"))).toEqual(["cp-0005", "cp-0004"]);
        const all = await history("--thread", "meta");
        expect(ids(all)).toEqual(["cp-0005", "cp-0004", "cp-0003", "cp-0002", "cp-0001", "cp-0000"]);
        expect(all[5].changed).toEqual(["counter", "even"]);
        expect(all[5].metadata).toEqual({ source: "input", step: 0, parents: {}, user: "u42" });
        expect(await history("--thread", "meta", "--limit", "0")).toEqual([]);
      });

      it("history and show in a subgraph namespace (--ns)", async () => {
        expect(ids(await history("--thread", "nested"))).toEqual(["root-0"]);
        const sub = await history("--thread", "nested", "--ns", "child:1");
        expect(sub.map((l) => [l.checkpointId, l.ns, l.parentCheckpointId, l.changed])).toEqual([
          ["sub-1", "child:1", "sub-0", ["inner"]],
          ["sub-0", "child:1", null, ["inner"]],
        ]);
        const show = await cli(["show", "--url", url, "--thread", "nested", "--ns", "child:1", "--json"]);
        expect(show.code, show.stderr).toBe(0);
        expect(jsonLines<ShowDocument>(show.stdout)[0]).toMatchObject({ checkpointId: "sub-1", values: { inner: 2 } });
        const human = await cli([
          "show",
          "--url",
          url,
          "--thread",
          "nested",
          "--ns",
          "child:1",
          "--checkpoint",
          "sub-0",
        ]);
        expect(human.code, human.stderr).toBe(0);
        expect(human.stdout).toMatch(/^namespace\s+child:1$/m);
        expect(human.stdout).toMatch(/^\s+inner\s+1$/m);
        expectOneLineError(
          await cli(["show", "--url", url, "--thread", "nested", "--ns", "child:2"]),
          1,
          /thread "nested" has no checkpoints in namespace "child:2"/,
        );
      });

      it("history streams a long thread page by page and stops quietly when the reader goes away", async () => {
        await seedMetadataThread(url, "long", 450);
        const all = await history("--thread", "long");
        expect(all).toHaveLength(450);
        expect(ids(all)).toEqual(Array.from({ length: 450 }, (_, i) => `cp-${String(449 - i).padStart(4, "0")}`));
        // Every row found its parent, across the pages of 100.
        expect(all.slice(0, -1).every((line) => line.changed.length === 2)).toBe(true);
        const head = await cliHead(["history", "--url", url, "--thread", "long", "--json"], 2);
        expect(head.code, head.stderr).toBe(0);
        expect(head.stderr).toBe("");
        expect(ids(jsonLines<HistoryLine>(head.stdout))).toEqual(["cp-0449", "cp-0448"]);
      });

      it("history errors: unknown thread, unknown checkpoint, other namespace, malformed filters", async () => {
        expectOneLineError(await cli(["history", "--url", url, "--thread", "nope"]), 1, /unknown thread "nope"/);
        expectOneLineError(
          await cli(["history", "--url", url, "--thread", "nope", "--filter", "user=u42", "--json"]),
          1,
          /unknown thread "nope"/,
        );
        expectOneLineError(
          await cli(["history", "--url", url, "--thread", "meta", "--before", "cp-9999"]),
          1,
          /unknown checkpoint "cp-9999" in thread "meta"/,
        );
        expectOneLineError(
          await cli(["history", "--url", url, "--thread", "meta", "--ns", "sub"]),
          1,
          /thread "meta" has no checkpoints in namespace "sub"/,
        );
        expectOneLineError(
          await cli(["history", "--url", url, "--thread", "meta", "--filter", "step"]),
          2,
          /--filter.*'step'.*no "="/,
        );
        expectOneLineError(
          await cli(["history", "--url", url, "--thread", "meta", "--filter", "=3"]),
          2,
          /--filter.*'=3'.*empty key/,
        );
        expectOneLineError(
          await cli(["threads", "--url", url, "--filter", "a=1", "--filter", "a=2"]),
          2,
          /"a" is given twice/,
        );
        expectOneLineError(await cli(["history", "--url", url, "--thread", "meta", "--limit", "x"]), 2, /--limit/);
        expectOneLineError(await cli(["history", "--url", url]), 2, /--thread/);
      });

      it("show: decoded values and pending writes of the newest checkpoint", async () => {
        const json = await cli(["show", "--url", url, "--thread", seeded.interrupted, "--json"]);
        expect(json.code, json.stderr).toBe(0);
        const [doc] = jsonLines<ShowDocument>(json.stdout);
        expect(doc.values.messages).toEqual([
          { type: "human", content: "hello", id: "human-1" },
          { type: "ai", content: "answer 1", id: "ai-1" },
        ]);
        expect(doc.values.count).toBe(1);
        expect(doc.metadata).toMatchObject({ source: "loop", step: 1 });
        const interrupt = doc.pendingWrites.find((w) => w.channel === "__interrupt__");
        expect(interrupt?.value).toEqual([expect.objectContaining({ value: { question: "approve?" } })]);

        const human = await cli(["show", "--url", url, "--thread", seeded.interrupted]);
        expect(human.code, human.stderr).toBe(0);
        expect(human.stdout).toMatch(new RegExp(`^checkpoint\\s+${doc.checkpointId}$`, "m"));
        expect(human.stdout).toMatch(new RegExp(`^parent\\s+${doc.parentCheckpointId}$`, "m"));
        expect(human.stdout).toMatch(/^source\s+loop$/m);
        expect(human.stdout).toMatch(/^step\s+1$/m);
        expect(human.stdout).toMatch(/^\s+count\s+1$/m);
        expect(human.stdout).toContain('{"type":"human","content":"hello","id":"human-1"}');
        expect(human.stdout).toContain("pending writes (1)");
        expect(human.stdout).toMatch(/__interrupt__\s+\[\{"id":"[^"]+","value":\{"question":"approve\?"\}\}\]/);
      });

      it("show --checkpoint: an older checkpoint, and values such as dates", async () => {
        const lines = await history("--thread", seeded.finished);
        const latest = await cli(["show", "--url", url, "--thread", seeded.finished, "--json"]);
        const [newest] = jsonLines<ShowDocument>(latest.stdout);
        expect(newest.checkpointId).toBe(lines[0].checkpointId);
        expect(newest.values).toMatchObject({ note: "review: yes", seen: "2025-01-02T03:04:05.000Z", count: 1 });
        expect(newest.pendingWrites).toEqual([]);

        const stepOne = lines.find((l) => l.step === 1);
        const older = await cli([
          "show",
          "--url",
          url,
          "--thread",
          seeded.finished,
          "--checkpoint",
          String(stepOne?.checkpointId),
          "--json",
        ]);
        expect(older.code, older.stderr).toBe(0);
        const [doc] = jsonLines<ShowDocument>(older.stdout);
        expect(doc.checkpointId).toBe(stepOne?.checkpointId);
        expect(doc.values.note).toBeUndefined();
        expect(doc.values.messages).toEqual([
          { type: "human", content: "hi there", id: "human-2" },
          { type: "ai", content: "answer 1", id: "ai-1" },
        ]);

        const meta = await cli(["show", "--url", url, "--thread", "meta", "--checkpoint", "cp-0002", "--json"]);
        const [metaDoc] = jsonLines<ShowDocument>(meta.stdout);
        expect(metaDoc.values).toEqual({
          counter: 2,
          even: { step: 2, created: "2025-01-01T00:00:00.000Z" },
          odd: { step: 1, created: "2025-01-01T00:00:00.000Z" },
        });
        expect(metaDoc.time).toBe("2025-01-01T00:00:02.000Z");
      });

      it("show errors: unknown thread, unknown checkpoint", async () => {
        expectOneLineError(await cli(["show", "--url", url, "--thread", "nope"]), 1, /unknown thread "nope"/);
        expectOneLineError(
          await cli(["show", "--url", url, "--thread", "meta", "--checkpoint", "cp-9999"]),
          1,
          /unknown checkpoint "cp-9999" in thread "meta"/,
        );
        expectOneLineError(
          await cli(["show", "--url", url, "--thread", "nope", "--checkpoint", "cp-0001"]),
          1,
          /unknown thread "nope"/,
        );
      });
    });

    describe("copy, prune and expire", () => {
      let url: string;
      let seeded: Seeded;
      const threadList = async () => {
        const result = await cli(["threads", "--url", url, "--json"]);
        expect(result.code, result.stderr).toBe(0);
        return jsonLines<ThreadLine>(result.stdout).map((t): [string, number] => [t.threadId, t.checkpoints]);
      };
      const historyIds = async (thread: string) => {
        const result = await cli(["history", "--url", url, "--thread", thread, "--json"]);
        expect(result.code, result.stderr).toBe(0);
        return ids(jsonLines<HistoryLine>(result.stdout));
      };
      beforeAll(async () => {
        url = await freshDatabaseUrl(dialect);
        const migrated = await cli(["migrate", "--url", url]);
        expect(migrated.code, migrated.stderr).toBe(0);
        seeded = await seedGraphThreads(url);
        await seedMetadataThread(url, "meta", 6);
      });

      it("copy --dry-run checks and counts, changes nothing", async () => {
        const result = await cli(["copy", "--url", url, seeded.finished, "copy-a", "copy-b", "--dry-run"]);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toBe(
          `would copy thread "${seeded.finished}" (5 checkpoints, 1 namespace) to "copy-a", "copy-b"\n`,
        );
        const json = await cli(["copy", "--url", url, seeded.finished, "copy-a", "--dry-run", "--json"]);
        expect(jsonLines(json.stdout)).toEqual([
          { dryRun: true, source: seeded.finished, targets: ["copy-a"], checkpoints: 5, namespaces: 1 },
        ]);
        expect((await threadList()).map(([id]) => id)).not.toContain("copy-a");
      });

      it("copy copies to each target with a progress bar", async () => {
        const result = await cli(["copy", "--url", url, seeded.finished, "copy-a", "copy-b", "--progress"]);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toBe(`copied thread "${seeded.finished}" to "copy-a", "copy-b"\n`);
        expect(result.stderr).toContain("2/2 threads");
        const source = await historyIds(seeded.finished);
        expect(await historyIds("copy-a")).toEqual(source);
        expect(await historyIds("copy-b")).toEqual(source);

        const json = await cli(["copy", "--url", url, "meta", "copy-meta", "--json"]);
        expect(json.code, json.stderr).toBe(0);
        expect(jsonLines(json.stdout)).toEqual([{ source: "meta", targets: ["copy-meta"] }]);
        // Without --progress and without a terminal there is no bar.
        expect(json.stderr).toBe("");
      });

      it("copy errors: unknown source, non-empty target, same thread", async () => {
        expectOneLineError(await cli(["copy", "--url", url, "nope", "copy-z"]), 1, /unknown thread "nope"/);
        expectOneLineError(
          await cli(["copy", "--url", url, "meta", "copy-z", "copy-a"]),
          1,
          /target thread "copy-a" already has checkpoints/,
        );
        expectOneLineError(await cli(["copy", "--url", url, "meta", "meta"]), 2, /onto itself/);
        expect((await threadList()).map(([id]) => id)).not.toContain("copy-z");
      });

      it("prune --dry-run shows what would be removed", async () => {
        const result = await cli(["prune", "--url", url, "copy-a", "copy-meta", "--dry-run", "--json"]);
        expect(result.code, result.stderr).toBe(0);
        expect(jsonLines(result.stdout)).toEqual([
          { dryRun: true, strategy: "keep_latest", threadId: "copy-a", checkpoints: 5, namespaces: 1, remove: 4 },
          { dryRun: true, strategy: "keep_latest", threadId: "copy-meta", checkpoints: 6, namespaces: 1, remove: 5 },
        ]);
        const human = await cli(["prune", "--url", url, "copy-a", "--dry-run", "--strategy", "delete"]);
        expect(human.code, human.stderr).toBe(0);
        expect(human.stdout).toMatch(/^copy-a\s+5\s+1\s+5$/m);
        expect(human.stdout).toContain("would remove 5 checkpoints from 1 thread (strategy delete)");
        expect(await threadList()).toContainEqual(["copy-a", 5]);
      });

      it("prune keeps the newest checkpoint, or deletes threads read from stdin", async () => {
        const kept = await cli(["prune", "--url", url, "copy-a", "--progress", "--yes"]);
        expect(kept.code, kept.stderr).toBe(0);
        expect(kept.stdout).toBe("pruned 1 thread (strategy keep_latest)\n");
        expect(kept.stderr).toContain("1/1 threads");
        const source = await historyIds(seeded.finished);
        expect(await historyIds("copy-a")).toEqual([source[0]]);
        // The kept checkpoint still has its state.
        const show = await cli(["show", "--url", url, "--thread", "copy-a", "--json"]);
        expect(jsonLines<ShowDocument>(show.stdout)[0].values).toMatchObject({ note: "review: yes", count: 1 });

        const deleted = await cli(["prune", "--url", url, "-", "--strategy", "delete", "--json", "--yes"], {
          input: "copy-b\ncopy-meta\n",
        });
        expect(deleted.code, deleted.stderr).toBe(0);
        expect(jsonLines(deleted.stdout)).toEqual([{ threads: 2, strategy: "delete" }]);
        const remaining = (await threadList()).map(([id]) => id);
        expect(remaining).not.toContain("copy-b");
        expect(remaining).not.toContain("copy-meta");
      });

      it("prune errors: an unknown thread stops it before anything changes; a bad strategy", async () => {
        const before = await threadList();
        expectOneLineError(await cli(["prune", "--url", url, "meta", "ghost", "--yes"]), 1, /unknown thread "ghost"/);
        expect(await threadList()).toEqual(before);
        expectOneLineError(await cli(["prune", "--url", url, "meta", "--strategy", "all"]), 2, /--strategy/);
        expectOneLineError(await cli(["prune", "--url", url, "-"], { input: "" }), 2, /no thread ids/);
      });

      it("expire: dry run, keep_latest, then delete, by date and by duration", async () => {
        // Everything so far is older than `cutoff`; "fresh" is newer.
        await new Promise((r) => setTimeout(r, 50));
        const cutoff = new Date().toISOString();
        await new Promise((r) => setTimeout(r, 50));
        await seedMetadataThread(url, "fresh", 2);
        const old = (await threadList()).map(([id]) => id).filter((id) => id !== "fresh");

        const dry = await cli(["expire", "--url", url, "--idle-since", cutoff, "--dry-run", "--json"]);
        expect(dry.code, dry.stderr).toBe(0);
        expect(jsonLines<ThreadLine>(dry.stdout).map((t) => t.threadId)).toEqual(old);
        const human = await cli(["expire", "--url", url, "--idle-since", cutoff, "--dry-run"]);
        expect(human.stdout).toContain(`would expire ${old.length} threads idle since ${cutoff} (strategy delete)`);
        // Ten years ago nothing was idle yet.
        const none = await cli(["expire", "--url", url, "--idle-since", "3650d", "--dry-run", "--json"]);
        expect(none.code, none.stderr).toBe(0);
        expect(none.stdout).toBe("");

        const kept = await cli([
          "expire",
          "--url",
          url,
          "--idle-since",
          cutoff,
          "--strategy",
          "keep_latest",
          "--batch-size",
          "1",
          "--json",
          "--progress",
          "--yes",
        ]);
        expect(kept.code, kept.stderr).toBe(0);
        expect(jsonLines(kept.stdout)).toEqual([{ threads: old.length, strategy: "keep_latest", idleSince: cutoff }]);
        expect(kept.stderr).toContain(`${old.length}/${old.length} threads`);
        const expected = [...old.map((id): [string, number] => [id, 1]), ["fresh", 2] as [string, number]];
        expect(await threadList()).toEqual(expected.sort(([a], [b]) => (a < b ? -1 : 1)));

        const deleted = await cli(["expire", "--url", url, "--idle-since", cutoff, "--yes"]);
        expect(deleted.code, deleted.stderr).toBe(0);
        expect(deleted.stdout).toBe(`expired ${old.length} threads idle since ${cutoff} (strategy delete)\n`);
        expect(await threadList()).toEqual([["fresh", 2]]);
      });

      it("expire errors: a bad --idle-since, a missing one", async () => {
        expectOneLineError(
          await cli(["expire", "--url", url, "--idle-since", "yesterday"]),
          2,
          /--idle-since.*ISO date.*duration/,
        );
        expectOneLineError(await cli(["expire", "--url", url]), 2, /--idle-since/);
        expectOneLineError(
          await cli(["expire", "--url", url, "--idle-since", "1d", "--batch-size", "0"]),
          2,
          /--batch-size/,
        );
      });
    });
  });
}
