// Issue 13: prune and expire ask before deleting on a terminal, refuse with exit code 2
// anywhere else unless --yes is given, and --dry-run never asks. The terminal is a
// real pseudo-terminal made by util-linux's `script`.
import { spawn } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { BIN, type CliResult, cli, cliEnv, ensureBuilt, expectOneLineError, jsonLines } from "./helpers.js";
import { seedMetadataThread } from "./seed.js";

const shellQuote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`;

/** Runs the binary on a pseudo-terminal (stdin, stdout and stderr all a tty), typing `typed`. */
function cliOnTerminal(args: string[], typed: string): Promise<CliResult> {
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(" ");
  return new Promise((resolve, reject) => {
    // -e: exit with the command's code; -q: no "Script started" lines; no log file.
    const child = spawn("script", ["-qec", command, "/dev/null"], { env: cliEnv(), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr: "" }));
    child.stdin.end(typed);
  });
}

describe("confirmation before deleting", { timeout: 300_000 }, () => {
  let url: string;
  const threads = async () => {
    const result = await cli(["threads", "--url", url, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    return jsonLines(result.stdout).map((t) => [t.threadId, t.checkpoints]);
  };
  beforeAll(async () => {
    await ensureBuilt();
    url = await freshDatabaseUrl("sqlite");
    const migrated = await cli(["migrate", "--url", url]);
    expect(migrated.code, migrated.stderr).toBe(0);
    for (const id of ["a", "b", "c"]) await seedMetadataThread(url, id, 3);
  }, 15 * 60_000);

  it("not on a terminal: prune and expire refuse with exit code 2 and change nothing", async () => {
    const before = await threads();
    expectOneLineError(
      await cli(["prune", "--url", url, "a", "--strategy", "delete"]),
      2,
      /delete 1 thread with all their checkpoints: not on a terminal, so nothing was changed; pass --yes to confirm/,
    );
    expectOneLineError(
      await cli(["expire", "--url", url, "--idle-since", "1ms"]),
      2,
      /delete 3 threads idle since .*: not on a terminal, so nothing was changed; pass --yes/,
    );
    // Thread ids read from stdin: stdin cannot answer, even where stderr is a terminal.
    expectOneLineError(await cli(["prune", "--url", url, "-"], { input: "a\nb\n" }), 2, /stdin holds the thread ids/);
    expect(await threads()).toEqual(before);
  });

  it("--dry-run never asks, and --yes deletes without asking", async () => {
    const dry = await cli(["expire", "--url", url, "--idle-since", "1ms", "--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(jsonLines(dry.stdout)).toHaveLength(3);
    const pruned = await cli(["prune", "--url", url, "-", "--yes"], { input: "a\n" });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(await threads()).toEqual([
      ["a", 1],
      ["b", 3],
      ["c", 3],
    ]);
  });

  it("on a terminal: asks, and only y or yes goes ahead", async () => {
    const declined = await cliOnTerminal(["prune", "--url", url, "b", "--strategy", "delete"], "n\n");
    expect(declined.code, declined.stdout).toBe(1);
    expect(declined.stdout).toContain("delete 1 thread with all their checkpoints? [y/N]");
    expect(declined.stdout).toContain("error: aborted: nothing was changed");
    const dry = await cliOnTerminal(["prune", "--url", url, "b", "--dry-run"], "");
    expect(dry.code, dry.stdout).toBe(0);
    expect(dry.stdout).not.toContain("[y/N]");
    expect((await threads()).map(([id]) => id)).toEqual(["a", "b", "c"]);

    const accepted = await cliOnTerminal(["prune", "--url", url, "b", "--strategy", "delete"], "y\n");
    expect(accepted.code, accepted.stdout).toBe(0);
    expect(accepted.stdout).toContain("pruned 1 thread (strategy delete)");
    const expired = await cliOnTerminal(["expire", "--url", url, "--idle-since", "1ms", "--no-progress"], "yes\n");
    expect(expired.code, expired.stdout).toBe(0);
    expect(expired.stdout).toMatch(/delete 2 threads idle since \S+ \(strategy delete\)\? \[y\/N\]/);
    expect(expired.stdout).toContain("expired 2 threads");
    expect(await threads()).toEqual([]);
  });
});
