import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsNobody, ensureBuilt, expectOneLineError, rawQuery } from "./helpers.js";
import { seedMetadataThread } from "./seed.js";

const READERS = [["status"], ["threads"], ["history", "--thread", "meta"], ["show", "--thread", "meta"]];

const digest = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
/** Bytes 18 and 19 of the header: 1 for a rollback journal, 2 for WAL. */
const journalBytes = (path: string) => [...readFileSync(path).subarray(18, 20)];

/** A migrated database with a thread, switched back to a rollback journal. */
async function rollbackDatabase(dir: string): Promise<string> {
  const path = join(dir, "checkpoints.db");
  const migrated = await cli(["migrate", "--url", path]);
  expect(migrated.code, migrated.stderr).toBe(0);
  await seedMetadataThread(path, "meta", 3);
  await rawQuery("sqlite", path, "pragma journal_mode = delete");
  expect(journalBytes(path)).toEqual([1, 1]);
  return path;
}

describe("read-only commands on SQLite", { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await ensureBuilt();
  }, 15 * 60_000);

  it("leave a rollback-journal database byte for byte as it was, with no -wal or -shm file", async () => {
    const path = await rollbackDatabase(mkdtempSync(join(tmpdir(), "lgcd-ro-")));
    const before = digest(path);
    for (const command of READERS) {
      const result = await cli([...command, "--url", path]);
      expect(result.code, result.stderr).toBe(0);
    }
    expect(journalBytes(path)).toEqual([1, 1]);
    expect(digest(path)).toBe(before);
    expect(existsSync(`${path}-wal`)).toBe(false);
    expect(existsSync(`${path}-shm`)).toBe(false);
  });

  it("status leaves an empty file empty, and creates no missing file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lgcd-ro-"));
    const empty = join(dir, "empty.db");
    writeFileSync(empty, "");
    const result = await cli(["status", "--url", empty]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("0 applied");
    expect(statSync(empty).size).toBe(0);

    const missing = join(dir, "missing.db");
    expectOneLineError(await cli(["status", "--url", `file:${missing}`]), 1, /no SQLite database at/);
    expect(existsSync(missing)).toBe(false);
  });

  it("work in a directory the user cannot write to; a WAL file there gets a clear error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lgcd-ro-"));
    const path = await rollbackDatabase(dir);
    const wal = join(dir, "wal.db");
    const migrated = await cli(["migrate", "--url", wal]);
    expect(migrated.code, migrated.stderr).toBe(0);
    chmodSync(path, 0o644);
    chmodSync(wal, 0o644);
    chmodSync(dir, 0o555);
    try {
      for (const command of READERS) {
        const result = await cliAsNobody([...command, "--url", path]);
        expect(result.code, `${command.join(" ")}: ${result.stderr}`).toBe(0);
        if (command[0] === "threads") expect(result.stdout).toMatch(/^meta\s+3\s+cp-0002/m);
      }
      // SQLite must create wal.db-shm to read a WAL file: impossible here, and said so.
      expectOneLineError(
        await cliAsNobody(["threads", "--url", wal]),
        1,
        /cannot read ".*wal\.db" without writing: it is a WAL-mode database/,
      );
    } finally {
      chmodSync(dir, 0o755);
    }
  });
});
