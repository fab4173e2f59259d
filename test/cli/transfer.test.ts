// Issue 31, finding 7: what `export` and `import` touch. Sources are opened read-only
// (an SQLite file stays byte for byte the same, a read-only one works); `export --out`
// never writes through a symbolic link, never overwrites without --force, and creates
// its file with mode 0600; `import --replace` asks like `sweep`; the failure lines of
// `export` are escaped.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import {
  BIN,
  type CliResult,
  cli,
  cliAsNobody,
  cliEnv,
  ensureBuilt,
  expectOneLineError,
  jsonLines,
  rawQuery,
} from "./helpers.js";
import { seedMetadataThread } from "./seed.js";

const digest = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
/** Bytes 18 and 19 of the header: 1 for a rollback journal, 2 for WAL. */
const journalBytes = (path: string) => [...readFileSync(path).subarray(18, 20)];
const shellQuote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`;

/** Runs the binary on a pseudo-terminal (util-linux `script`), typing `typed`. */
function cliOnTerminal(args: string[], typed: string): Promise<CliResult> {
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(" ");
  return new Promise((done, reject) => {
    const child = spawn("script", ["-qec", command, "/dev/null"], { env: cliEnv(), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => done({ code, stdout, stderr: "" }));
    child.stdin.end(typed);
  });
}

/** A migrated database of `dialect` with thread "meta" of `checkpoints` checkpoints (none for 0). */
async function database(dialect: DialectName, checkpoints: number): Promise<string> {
  const url = await freshDatabaseUrl(dialect);
  const migrated = await cli(["migrate", "--url", url]);
  expect(migrated.code, migrated.stderr).toBe(0);
  if (checkpoints > 0) await seedMetadataThread(url, "meta", checkpoints);
  return url;
}

async function checkpointsOf(url: string, thread: string): Promise<number> {
  const result = await cli(["history", "--url", url, "--thread", thread, "--json"]);
  expect(result.code, result.stderr).toBe(0);
  return jsonLines(result.stdout).length;
}

describe("import and export on the command line", { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await ensureBuilt();
  }, 15 * 60_000);

  it("leave an SQLite source byte for byte as it was, and read one the user cannot write", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lgcd-transfer-ro-"));
    const path = await database("sqlite", 3);
    await rawQuery("sqlite", path, "pragma journal_mode = delete");
    const source = join(dir, "source.db");
    writeFileSync(source, readFileSync(path));
    const before = digest(source);
    const target = await database("postgres", 0);

    const exported = await cli(["export", "--url", source, "--out", join(dir, "out.jsonl"), "--json"]);
    expect(exported.code, exported.stderr).toBe(0);
    const imported = await cli(["import", "--url", target, "--from", `file:${source}`, "--json"]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ imported: 1, failed: [] });
    expect(digest(source)).toBe(before);
    expect(journalBytes(source)).toEqual([1, 1]);
    expect(existsSync(`${source}-wal`)).toBe(false);
    expect(existsSync(`${source}-shm`)).toBe(false);

    // Read-only file in a read-only directory, as a user who owns neither; the output goes elsewhere.
    const outDir = mkdtempSync(join(tmpdir(), "lgcd-transfer-out-"));
    chmodSync(outDir, 0o777);
    chmodSync(source, 0o444);
    chmodSync(dir, 0o555);
    try {
      const readOnly = await cliAsNobody(["export", "--url", source, "--out", join(outDir, "nobody.jsonl")]);
      expect(readOnly.code, readOnly.stderr).toBe(0);
      expect(readOnly.stdout).toContain("exported 1 thread (3 checkpoints");
      const again = await cliAsNobody(["import", "--url", target, "--from", source, "--json"]);
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ unchanged: 1, failed: [] });
    } finally {
      chmodSync(dir, 0o755);
    }
    expect(digest(source)).toBe(before);
  });

  it("export --out never follows a symbolic link, never overwrites without --force, creates mode 0600", async () => {
    const url = await database("sqlite", 2);
    const dir = mkdtempSync(join(tmpdir(), "lgcd-transfer-out-"));
    const victim = join(dir, "victim.txt");
    writeFileSync(victim, "precious");
    const link = join(dir, "link.jsonl");
    symlinkSync(victim, link);
    for (const force of [[], ["--force"]]) {
      expectOneLineError(
        await cli(["export", "--url", url, "--out", link, ...force]),
        1,
        /link\.jsonl" is a symbolic link: an export is never written through one/,
      );
    }
    expect(readFileSync(victim, "utf8")).toBe("precious");

    expectOneLineError(
      await cli(["export", "--url", url, "--out", victim]),
      1,
      /victim\.txt" already exists: .*--force/,
    );
    expect(readFileSync(victim, "utf8")).toBe("precious");
    const forced = await cli(["export", "--url", url, "--out", victim, "--force"]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(victim, "utf8")).toMatch(/^\{"kind":"header"/);

    const fresh = join(dir, "fresh.jsonl");
    const created = await cli(["export", "--url", url, "--out", fresh]);
    expect(created.code, created.stderr).toBe(0);
    expect(statSync(fresh).mode & 0o777).toBe(0o600);
    expectOneLineError(await cli(["export", "--url", url, "--force"]), 2, /--force applies to --out only/);
  });

  it("escapes terminal controls in the failure lines export prints on stderr", async () => {
    const url = await database("sqlite", 1);
    const hostile = "evil\u001b]0;owned\u0007\u001b[2J\u009b31m\u202eexe";
    const result = await cli(["export", "--url", url, "--thread", hostile]);
    expect(result.code).toBe(1);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds.
    expect(result.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(result.stderr).toContain("evil\\u001b]0;owned\\u0007\\u001b[2J\\u009b31m\\u202eexe");
  });

  it("import --replace asks on a terminal: only y or yes replaces", async () => {
    const source = await database("sqlite", 3);
    const target = await database("sqlite", 2);
    const pinned = await cli(["pin", "--url", target, "meta"]);
    expect(pinned.code, pinned.stderr).toBe(0);

    const declined = await cliOnTerminal(["import", "--url", target, "--from", source, "--replace"], "n\n");
    expect(declined.code, declined.stdout).toBe(1);
    expect(declined.stdout).toContain(
      "replace every target thread that the source holds with other content, pinned ones too? [y/N]",
    );
    expect(declined.stdout).toContain("error: aborted: nothing was changed");
    expect(await checkpointsOf(target, "meta")).toBe(2);

    const accepted = await cliOnTerminal(
      ["import", "--url", target, "--from", source, "--replace", "--no-progress"],
      "y\n",
    );
    expect(accepted.code, accepted.stdout).toBe(0);
    expect(accepted.stdout).toContain("imported 0 threads, replaced 1, unchanged 0");
    expect(await checkpointsOf(target, "meta")).toBe(3);
  });
});

describe.each(DIALECTS)("import --replace off a terminal on %s", { timeout: 300_000 }, (dialect) => {
  beforeAll(async () => {
    await ensureBuilt();
  }, 15 * 60_000);

  it("refuses without --yes and changes nothing; --dry-run does not ask; --yes replaces", async () => {
    const source = await database("sqlite", 3);
    const target = await database(dialect, 2);
    const file = join(mkdtempSync(join(tmpdir(), "lgcd-transfer-replace-")), "threads.jsonl");
    expect((await cli(["export", "--url", source, "--out", file])).code).toBe(0);

    expectOneLineError(
      await cli(["import", "--url", target, "--from", source, "--replace"]),
      2,
      /replace every target thread that the source holds with other content, pinned ones too: not on a terminal, so nothing was changed; pass --yes to confirm/,
    );
    expectOneLineError(
      await cli(["import", "--url", target, "--file", "-", "--replace"], { input: readFileSync(file, "utf8") }),
      2,
      /: stdin holds the file, so nothing was changed; pass --yes/,
    );
    expect(await checkpointsOf(target, "meta")).toBe(2);

    const dry = await cli(["import", "--url", target, "--file", file, "--replace", "--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(0);
    const replaced = await cli(["import", "--url", target, "--file", resolve(file), "--replace", "--yes", "--json"]);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(JSON.parse(replaced.stdout)).toMatchObject({ replaced: 1, failed: [] });
    expect(await checkpointsOf(target, "meta")).toBe(3);
  });
});
