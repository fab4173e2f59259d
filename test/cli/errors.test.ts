import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, ensureBuilt, expectOneLineError } from "./helpers.js";

/** Errors that do not depend on a database: unreachable servers, bad URLs, usage. */
describe("CLI errors", { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await ensureBuilt();
  }, 15 * 60_000);

  it("an unreachable PostgreSQL server", async () => {
    for (const command of [["status"], ["migrate"], ["threads"], ["history", "--thread", "t"]]) {
      expectOneLineError(
        await cli([...command, "--url", "postgres://127.0.0.1:1/x"]),
        1,
        /^error: cannot reach postgres:\/\/127\.0\.0\.1:1\/x: connection refused \(ECONNREFUSED\)$/,
      );
    }
  });

  it("an unreachable MySQL server, its password hidden", async () => {
    expectOneLineError(
      await cli(["status", "--url", "mysql://user:secret@127.0.0.1:1/x"]),
      1,
      /^error: cannot reach mysql:\/\/user:\*\*\*@127\.0\.0\.1:1\/x: connection refused \(ECONNREFUSED\)$/,
    );
    expectOneLineError(
      await cli(["migrate"], { env: { LANGGRAPH_CHECKPOINT_URL: "mysql://user:secret@127.0.0.1:1/x" } }),
      1,
      /cannot reach mysql:\/\/user:\*\*\*@127\.0\.0\.1:1\/x/,
    );
  });

  it("an unreachable import source is the server named, not the target; both passwords hidden", async () => {
    const target = join(mkdtempSync(join(tmpdir(), "lgcd-cli-")), "target.sqlite");
    expect((await cli(["migrate", "--url", target])).code).toBe(0);
    for (const [source, named] of [
      [
        "postgres://app:source-secret@127.0.0.1:1/x",
        /cannot reach postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/x: connection refused/,
      ],
      [
        "mysql://app:source-secret@nowhere.invalid/x",
        /cannot reach mysql:\/\/app:\*\*\*@nowhere\.invalid\/x: .*\((ENOTFOUND|EAI_AGAIN)\)/,
      ],
    ] as const) {
      const result = await cli(["import", "--url", target, "--from", source]);
      expectOneLineError(result, 1, named);
      expect(result.stderr).not.toContain("source-secret");
    }
    // Two servers on one port: the error's host decides.
    const unreachable = await cli([
      "import",
      "--url",
      "postgres://app:target-secret@127.0.0.1:1/x",
      "--from",
      "postgres://app:source-secret@nowhere.invalid:1/x",
    ]);
    expectOneLineError(unreachable, 1, /cannot reach postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/x: connection refused/);
  });

  it("a host that does not resolve", async () => {
    expectOneLineError(
      await cli(["status", "--url", "postgresql://nowhere.invalid/x"]),
      1,
      /cannot reach postgresql:\/\/nowhere\.invalid\/x: .*\((ENOTFOUND|EAI_AGAIN)\)/,
    );
  });

  it("a bad URL", async () => {
    expectOneLineError(
      await cli(["status", "--url", "redis://localhost/0"]),
      2,
      /unsupported database URL scheme "redis:\/\/"/,
    );
    expectOneLineError(await cli(["migrate", "--url", "file:"]), 2, /names no file/);
    const missingDir = join(mkdtempSync(join(tmpdir(), "lgcd-cli-")), "no", "such", "dir", "db.sqlite");
    expectOneLineError(await cli(["migrate", "--url", missingDir]), 2, /directory does not exist/);
    expectOneLineError(await cli(["threads", "--url", missingDir]), 1, /no SQLite database at/);
  });

  it("no URL at all", async () => {
    expectOneLineError(await cli(["status"]), 2, /no database URL: pass --url or set LANGGRAPH_CHECKPOINT_URL/);
    expectOneLineError(await cli(["migrate"], { env: { LANGGRAPH_CHECKPOINT_URL: "" } }), 2, /no database URL/);
  });

  it("usage errors exit with 2, help and version with 0", async () => {
    expectOneLineError(await cli(["frobnicate"]), 2, /unknown command 'frobnicate'/);
    expectOneLineError(await cli(["status", "--colour"]), 2, /unknown option '--colour'/);
    expectOneLineError(await cli(["threads", "--url", "x.db", "--filter", "novalue"]), 2, /no "="/);
    const help = await cli(["history", "--help"]);
    expect(help.code).toBe(0);
    for (const option of ["--url", "--thread", "--ns", "--filter", "--before", "--limit", "--json"]) {
      expect(help.stdout).toContain(option);
    }
    const version = await cli(["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
    const none = await cli([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("Usage: langgraph-checkpoint-drizzle");
  });
});
