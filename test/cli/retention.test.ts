import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { HistoryWriter, openRaw } from "../lifecycle/support.js";
import { ageThreads, checkpointIds } from "../retention/support.js";
import { cli, ensureBuilt, expectOneLineError, jsonLines } from "./helpers.js";

/** The sweep, pin, unpin and prune --keep-last commands (issue 17). */
describe.each(DIALECTS)("the retention commands on %s", { timeout: 300_000 }, (dialect: DialectName) => {
  let url: string;
  const idle = ["old-a", "old-b", "old-c"];
  beforeAll(async () => {
    await ensureBuilt();
    const fresh = await freshSaver(dialect);
    url = fresh.url;
    for (const id of [...idle, "recent"]) {
      const writer = new HistoryWriter(fresh.saver, id);
      await writer.chain(4);
      await writer.chain(3, { ns: "child:1" });
    }
    await fresh.saver.close();
    const raw = await openRaw(dialect, url);
    await ageThreads(raw, idle, 72);
    await raw.close();
  }, 15 * 60_000);

  const stored = async () => {
    const saver = await DrizzleSaver.fromUrl(url);
    try {
      return (await saver.searchThreads({ sortBy: "threadId", order: "asc", limit: 100 })).map((t) => t.threadId);
    } finally {
      await saver.close();
    }
  };

  it("sweep --dry-run counts and changes nothing; without --yes and a terminal it refuses", async () => {
    const json = await cli(["sweep", "--url", url, "--idle-for", "2d", "--dry-run", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(jsonLines(json.stdout)).toEqual(idle.map((threadId) => ({ dryRun: true, strategy: "delete", threadId })));
    const human = await cli(["sweep", "--url", url, "--idle-for", "1d12h", "--dry-run", "--strategy", "keep_latest"]);
    expect(human.code, human.stderr).toBe(0);
    expect(
      human.stdout
        .split("\n")
        .slice(0, 4)
        .map((line) => line.trim()),
    ).toEqual(["THREAD", ...idle]);
    expect(human.stdout).toContain(
      "would sweep 3 threads idle for 1d12h (strategy keep_latest, keeping 1 per namespace)\n",
    );
    expectOneLineError(await cli(["sweep", "--url", url, "--idle-for", "2d"]), 2, /pass --yes to confirm/);
    expect(await stored()).toEqual([...idle, "recent"]);
  });

  it("pin, then sweep keep_latest --keep-last with a progress bar, then unpin and sweep delete", async () => {
    const pinned = await cli(["pin", "--url", url, "old-a", "--json"]);
    expect(pinned.code, pinned.stderr).toBe(0);
    expect(jsonLines(pinned.stdout)).toEqual([{ threads: ["old-a"], pinned: true }]);
    // listThreads reports the flag, and expire's dry run lists what its real run handles: not the pinned thread.
    const saver = await DrizzleSaver.fromUrl(url);
    try {
      const summaries: [string, boolean][] = [];
      for await (const thread of saver.listThreads()) summaries.push([thread.threadId, thread.pinned]);
      expect(summaries).toEqual([
        ["old-a", true],
        ["old-b", false],
        ["old-c", false],
        ["recent", false],
      ]);
    } finally {
      await saver.close();
    }
    const dry = await cli(["expire", "--url", url, "--idle-since", "2d", "--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(jsonLines<{ threadId: string }>(dry.stdout).map((t) => t.threadId)).toEqual(["old-b", "old-c"]);
    const kept = await cli([
      "sweep",
      "--url",
      url,
      "--idle-for",
      "2d",
      "--strategy",
      "keep_latest",
      "--keep-last",
      "2",
      "--yes",
      "--progress",
    ]);
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toBe(
      "swept 2 threads idle for 2d (strategy keep_latest, keeping 2 per namespace): 0 deleted, 2 pruned, 0 unchanged, 0 skipped\n",
    );
    expect(kept.stderr).toContain("2/2 threads");
    const raw = await openRaw(dialect, url);
    try {
      for (const id of ["old-b", "old-c"]) {
        expect([...(await checkpointIds(raw, id)).values()].map((list) => list.length)).toEqual([2, 2]);
      }
      expect([...(await checkpointIds(raw, "old-a")).values()].map((list) => list.length).sort()).toEqual([3, 4]);
    } finally {
      await raw.close();
    }
    const unpinned = await cli(["unpin", "--url", url, "-"], { input: "old-a\n" });
    expect(unpinned.stdout).toBe("unpinned 1 thread\n");
    const deleted = await cli(["sweep", "--url", url, "--idle-for", "2d", "--yes", "--json"]);
    expect(jsonLines(deleted.stdout)).toEqual([
      {
        scanned: 3,
        deleted: 3,
        pruned: 0,
        unchanged: 0,
        skipped: 0,
        dryRun: false,
        strategy: "delete",
        idleFor: "2d",
        keepLast: null,
      },
    ]);
    expect(await stored()).toEqual(["recent"]);
  });

  it("prune --keep-last: a dry run counts what goes, then it keeps the newest n of each namespace", async () => {
    const dry = await cli(["prune", "--url", url, "recent", "--keep-last", "2", "--dry-run", "--json"]);
    expect(jsonLines(dry.stdout)).toEqual([
      { dryRun: true, strategy: "keep_latest", threadId: "recent", checkpoints: 7, namespaces: 2, remove: 3 },
    ]);
    const pruned = await cli(["prune", "--url", url, "recent", "--keep-last", "2", "--yes"]);
    expect(pruned.stdout).toBe("pruned 1 thread (strategy keep_latest)\n");
    const raw = await openRaw(dialect, url);
    try {
      expect([...(await checkpointIds(raw, "recent")).values()].map((list) => list.length)).toEqual([2, 2]);
    } finally {
      await raw.close();
    }
  });

  it("errors: bad or missing --idle-for, --keep-last with delete, unknown threads", async () => {
    expectOneLineError(await cli(["sweep", "--url", url, "--idle-for", "soon"]), 2, /--idle-for/);
    expectOneLineError(await cli(["sweep", "--url", url]), 2, /--idle-for/);
    expectOneLineError(
      await cli(["sweep", "--url", url, "--idle-for", "1d", "--keep-last", "2", "--yes"]),
      2,
      /--keep-last applies to --strategy keep_latest only/,
    );
    expectOneLineError(await cli(["sweep", "--url", url, "--idle-for", "1d", "--keep-last", "0"]), 2, /--keep-last/);
    expectOneLineError(
      await cli(["prune", "--url", url, "recent", "--strategy", "delete", "--keep-last", "2", "--yes"]),
      2,
      /--keep-last applies/,
    );
    expectOneLineError(await cli(["pin", "--url", url, "recent", "ghost"]), 1, /unknown thread "ghost"/);
    expectOneLineError(await cli(["unpin", "--url", url]), 2, /missing required argument/);
  });
});
