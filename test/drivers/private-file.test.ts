import { chmodSync, lstatSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore, type UrlDriver } from "../../src/index.js";
import { emptyCheckpoint } from "../filters/reference.js";

/**
 * A SQLite file `fromUrl` creates holds whole conversations: it and the -wal and -shm
 * files SQLite makes beside it are private to their owner (0600), whatever the umask
 * lets others read; a file the application made keeps the mode it gave it.
 */
const modeOf = (path: string) => statSync(path).mode & 0o777;

async function writeOne(url: string, driver: UrlDriver): Promise<void> {
  const saver = await DrizzleSaver.fromUrl(url, { driver });
  try {
    await saver.setup();
    const metadata = { source: "input", step: -1, parents: {} } as CheckpointMetadata;
    await saver.put({ configurable: { thread_id: "t", checkpoint_ns: "" } }, emptyCheckpoint(), metadata, {});
  } finally {
    await saver.close();
  }
}

describe.each<UrlDriver>(["better-sqlite3", "libsql"])("the SQLite file fromUrl creates (%s)", (driver) => {
  const directory = () => mkdtempSync(join(tmpdir(), "private-file-"));

  it("is created with mode 0600, and so are its -wal and -shm files", async () => {
    const path = join(directory(), "app.db");
    const saver = await DrizzleSaver.fromUrl(path, { driver });
    try {
      await saver.setup();
      const metadata = { source: "input", step: -1, parents: {} } as CheckpointMetadata;
      await saver.put({ configurable: { thread_id: "t", checkpoint_ns: "" } }, emptyCheckpoint(), metadata, {});
      expect(modeOf(path)).toBe(0o600);
      expect(modeOf(`${path}-wal`)).toBe(0o600);
      expect(modeOf(`${path}-shm`)).toBe(0o600);
    } finally {
      await saver.close();
    }
  });

  it("is private when a file: URL names it, also for the store", async () => {
    const path = join(directory(), "store.db");
    const store = await DrizzleStore.fromUrl(`file:${path}`, { driver });
    try {
      await store.setup();
      await store.put(["ns"], "k", { v: 1 });
      expect(modeOf(path)).toBe(0o600);
    } finally {
      await store.close();
    }
  });

  it("leaves the mode of a database file the application made", async () => {
    const path = join(directory(), "shared.db");
    writeFileSync(path, "");
    chmodSync(path, 0o640);
    await writeOne(path, driver);
    expect(modeOf(path)).toBe(0o640);
    expect(lstatSync(path).isFile()).toBe(true);
  });
});
