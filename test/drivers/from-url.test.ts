import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect, promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { sqliteFile } from "../../src/database-family.js";
import { DrizzleSaver, DrizzleStore, type FromUrlOptions, InvalidInputError } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

const execute = promisify(execFile);

/** The driver `fromUrl` picked (white box: the saver's executor names it). */
const driverOf = (saver: DrizzleSaver) =>
  (saver as unknown as { dialect: { executor: { driver: string } } }).dialect.executor.driver;

async function roundTrip(url: string, options: FromUrlOptions = {}): Promise<string> {
  const saver = await DrizzleSaver.fromUrl(url, options);
  try {
    await saver.setup();
    const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };
    const checkpoint = {
      v: 4,
      id: "1",
      ts: new Date(0).toISOString(),
      channel_values: { a: 1 },
      channel_versions: { a: "1" },
      versions_seen: {},
    };
    await saver.put(config, checkpoint, { source: "input", step: -1, parents: {} }, { a: "1" });
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ a: 1 });
    return driverOf(saver);
  } finally {
    await saver.close();
  }
}

/** Runs fixtures/from-url.ts in a process where `hide` are not installed. */
async function fromUrlWithout(hide: string[], url: string) {
  const { stdout } = await execute(
    process.execPath,
    [
      "--import",
      "./test/drivers/fixtures/hide-packages.mjs",
      "--import",
      "tsx",
      "test/drivers/fixtures/from-url.ts",
      url,
    ],
    { env: { ...process.env, HIDE_PACKAGES: hide.join(",") } },
  );
  return JSON.parse(stdout) as { driver?: string; error?: string; message?: string; packages?: string[] };
}

describe("DrizzleSaver.fromUrl and SQLite file URLs", () => {
  it("decodes percent-escapes and leaves the query out of the file name", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lgcd-url-"));
    expect(await roundTrip(`file://${dir}/my%20db.db`)).toBe("better-sqlite3");
    expect(await roundTrip(`file://${dir}/q.db?mode=rwc&cache=shared`)).toBe("better-sqlite3");
    const files = readdirSync(dir);
    expect(files).toContain("my db.db");
    expect(files).toContain("q.db");
    expect(files.some((name) => name.includes("%") || name.includes("?"))).toBe(false);
  });

  it("reads file: URLs with the WHATWG rules, relative ones against the working directory", () => {
    expect(sqliteFile("file:///tmp/my%20db.db")).toBe("/tmp/my db.db");
    expect(sqliteFile("file:x.db?mode=ro")).toBe(join(process.cwd(), "x.db"));
    expect(sqliteFile("file:dir/a%23b.db#frag")).toBe(join(process.cwd(), "dir", "a#b.db"));
    expect(sqliteFile("file::memory:")).toBe(":memory:");
    expect(sqliteFile("plain path.db")).toBe("plain path.db");
    expect(sqliteFile("postgres://h/db")).toBeUndefined();
    expect(() => sqliteFile("file:")).toThrow(InvalidInputError);
    expect(() => sqliteFile("file://remote-host/x.db")).toThrow(InvalidInputError);
  });

  it("opens a file with libSQL when asked, in the same format better-sqlite3 reads", async () => {
    const url = `file://${mkdtempSync(join(tmpdir(), "lgcd-url-"))}/libsql%20app.db`;
    expect(await roundTrip(url, { driver: "libsql" })).toBe("@libsql/client");
    const again = await DrizzleSaver.fromUrl(url);
    try {
      expect(driverOf(again)).toBe("better-sqlite3");
      expect((await again.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.channel_values).toEqual({ a: 1 });
    } finally {
      await again.close();
    }
    await expect(DrizzleSaver.fromUrl(url, { driver: "pg" })).rejects.toThrow(/does not serve file: URLs/);
  });
});

describe("DrizzleSaver.fromUrl and servers", () => {
  it("opens postgres:// with postgres.js, or with pg when asked", async () => {
    const url = await freshDatabaseUrl("postgres");
    expect(await roundTrip(url)).toBe("postgres");
    expect(await roundTrip(url.replace(/^postgres:/, "postgresql:"), { driver: "pg" })).toBe("pg");
  });

  it("opens mariadb:// and mysql:// with mysql2", async () => {
    const url = await freshDatabaseUrl("mysql");
    expect(await roundTrip(url.replace(/^mysql:/, "mariadb:"))).toBe("mysql2");
    expect(await roundTrip(url)).toBe("mysql2");
  });
});

describe("DrizzleSaver.fromUrl and DrizzleStore.fromUrl with malformed URLs", () => {
  const SECRET = "Pa55-s3cr3t";
  // Node's URL parser puts the whole URL, password included, on its error (`input`), which loggers print.
  it.each([
    `postgres://app:${SECRET}@127.0.0.1:notaport/db`,
    `postgresql://app:${SECRET}#1@127.0.0.1:5432/db`,
    `postgres://app:${SECRET}@127.0.0.1:99999/db`,
    `postgres://app:${SECRET}%@127.0.0.1:5432/db`,
    `mysql://app:${SECRET}@[::1:3306/db`,
    `mariadb://app:${SECRET}#1@127.0.0.1:3306/db`,
    `mysql://app:${SECRET}%zz@127.0.0.1:3306/db`,
    `file://app:${SECRET}@host/x.db`,
  ])("%s: an InvalidInputError that never shows the password", async (url) => {
    for (const open of [() => DrizzleSaver.fromUrl(url), () => DrizzleStore.fromUrl(url)]) {
      const error = await open().then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(InvalidInputError);
      const everything = `${String(error)}\n${(error as Error).stack}\n${inspect(error, { depth: 10 })}`;
      expect(everything).not.toContain(SECRET);
    }
  });
});

describe("DrizzleSaver.fromUrl without the driver installed", () => {
  it("falls back to pg when postgres.js is not installed", async () => {
    expect(await fromUrlWithout(["postgres"], await freshDatabaseUrl("postgres"))).toEqual({ driver: "pg" });
  });

  it("says which package to install when no driver serves the scheme", async () => {
    expect(await fromUrlWithout(["postgres", "pg"], "postgres://127.0.0.1:1/x")).toEqual({
      error: "DriverNotInstalledError",
      message: "no driver for postgres: URLs is installed: npm install postgres (or pg)",
      packages: ["postgres", "pg"],
    });
    const dir = mkdtempSync(join(tmpdir(), "lgcd-url-"));
    const result = await fromUrlWithout(["better-sqlite3"], join(dir, "x.db"));
    expect(result.message).toBe("no driver for file: URLs is installed: npm install better-sqlite3");
    expect(existsSync(join(dir, "x.db"))).toBe(false);
  });
});
