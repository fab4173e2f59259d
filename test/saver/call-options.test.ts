// The options objects of the public calls beyond the constructors (rekey of the saver and of
// the store, importThreads and exportThreads with their sources): a misspelt key is an
// InvalidInputError naming it, before anything is opened, read or written. It was dropped without a word: `{ dryrun: true }` imported for real,
// `{ decypt: keys }` exported sealed values, `{ threadID: [...] }` moved every thread.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  DrizzleSaver,
  DrizzleStore,
  exportThreads,
  type ImportFrom,
  InvalidInputError,
  importThreads,
} from "../../src/index.js";
import { TEST_ENCRYPTION } from "../encryption/keys.js";
import { grow } from "../encryption/threads.js";
import { DIALECTS, type DialectName, freshDatabaseUrl, freshSaver } from "../helpers/databases.js";

const temporaryDirectory = () => mkdtempSync(join(tmpdir(), "lgcd-"));

async function expectRefused(call: () => unknown, message: string): Promise<void> {
  let error: unknown;
  try {
    await call();
  } catch (caught) {
    error = caught;
  }
  expect(error, message).toBeInstanceOf(InvalidInputError);
  expect((error as Error).message).toBe(message);
}

/** The threads a database holds (its saver's listing). */
async function threadsOf(url: string): Promise<string[]> {
  const saver = await DrizzleSaver.fromUrl(url);
  try {
    const ids: string[] = [];
    for await (const thread of saver.listThreads()) ids.push(thread.threadId);
    return ids;
  } finally {
    await saver.close();
  }
}

/** A database with one plaintext thread and one plaintext store item. */
async function source(dialect: DialectName): Promise<string> {
  const { saver, url } = await freshSaver(dialect);
  await grow(saver, "t1", "secret", 2);
  await saver.close();
  const store = await DrizzleStore.fromUrl(url);
  await store.put(["notes"], "n1", { text: "secret" });
  await store.close();
  return url;
}

describe.each(DIALECTS)("call options on %s: unknown keys refused", (dialect: DialectName) => {
  it("rekey of the saver and of the store re-seals nothing when an option is misspelt", async () => {
    const url = await source(dialect);
    const saver = await DrizzleSaver.fromUrl(url, { encryption: TEST_ENCRYPTION });
    const store = await DrizzleStore.fromUrl(url, { encryption: TEST_ENCRYPTION });
    try {
      const before = await saver.encryptionStatus();
      expect(before.plaintext).toBeGreaterThan(0);
      expect(before.store?.plaintext).toBe(1);
      await expectRefused(() => saver.rekey({ batchsize: 1 } as never), 'rekey: unknown option "batchsize"');
      await expectRefused(() => saver.rekey({ stores: false } as never), 'rekey: unknown option "stores"');
      await expectRefused(() => saver.rekey(null as never), "rekey: options must be an object");
      await expectRefused(() => store.rekey({ batchsize: 1 } as never), 'rekey: unknown option "batchsize"');
      await expectRefused(() => store.rekey(null as never), "rekey: options must be an object");
      expect(await saver.encryptionStatus()).toEqual(before);
    } finally {
      await saver.close();
      await store.close();
    }
  });

  it("importThreads writes nothing when an option or a source option is misspelt", async () => {
    const from = await source(dialect);
    const { saver: target, url } = await freshSaver(dialect);
    await target.close();
    const dir = temporaryDirectory();
    const file = join(dir, "threads.jsonl");
    expect((await exportThreads({ url: from }, file)).threads).toBe(1);
    await expectRefused(
      () => importThreads(url, { url: from }, { dryrun: true } as never),
      'importThreads: unknown option "dryrun"',
    );
    await expectRefused(
      () => importThreads(url, { url: from, threadID: ["other"] } as ImportFrom),
      'importThreads: from: unknown option "threadID"',
    );
    await expectRefused(
      () => importThreads(url, { file, threadids: ["other"] } as ImportFrom),
      'importThreads: from: unknown option "threadids"',
    );
    await expectRefused(
      () => importThreads(url, { url: from }, null as never),
      "importThreads: options must be an object",
    );
    expect(await threadsOf(url)).toEqual([]);
  });

  it("exportThreads writes no file when an option or a source option is misspelt", async () => {
    const from = await source(dialect);
    const file = join(temporaryDirectory(), "threads.jsonl");
    await expectRefused(
      () => exportThreads({ url: from }, file, { decypt: TEST_ENCRYPTION } as never),
      'exportThreads: unknown option "decypt"',
    );
    await expectRefused(
      () => exportThreads({ url: from, threadID: ["other"] } as ImportFrom, file),
      'exportThreads: from: unknown option "threadID"',
    );
    await expectRefused(() => exportThreads(null as never, file), "exportThreads: from must be an object, got null");
    expect(existsSync(file)).toBe(false);
  });
});

describe("call options before anything is opened", () => {
  it("importThreads into a SQLite file that is not there refuses a misspelt option without creating it", async () => {
    const target = await freshDatabaseUrl("sqlite");
    await expectRefused(
      () => importThreads(target, { url: target }, { replce: true } as never),
      'importThreads: unknown option "replce"',
    );
    expect(existsSync(target)).toBe(false);
  });
});
