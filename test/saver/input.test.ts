import type { RunnableConfig } from "@langchain/core/runnables";
import { type Checkpoint, type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver, InvalidInputError } from "../../src/index.js";
import { DIALECTS, freshSaver } from "../helpers/databases.js";

function checkpoint(values: Record<string, unknown> = {}): Checkpoint {
  return {
    v: 4,
    id: uuid6(-1),
    ts: new Date().toISOString(),
    channel_values: values,
    channel_versions: Object.fromEntries(Object.keys(values).map((key) => [key, "1"])),
    versions_seen: {},
  };
}
const metadata: CheckpointMetadata = { source: "loop", step: 0, parents: {} };

async function countRows(saver: DrizzleSaver): Promise<number> {
  let count = 0;
  for await (const _ of saver.list({})) count++;
  return count;
}

describe.each(DIALECTS)("input handling on %s", (dialect) => {
  let saver: DrizzleSaver;
  let url: string;
  beforeAll(async () => {
    ({ saver, url } = await freshSaver(dialect));
  });
  afterAll(() => saver.close());

  it("rejects writes without a thread_id and writes nothing", async () => {
    const before = await countRows(saver);
    await expect(saver.put({ configurable: {} }, checkpoint(), metadata, {})).rejects.toThrow(InvalidInputError);
    await expect(saver.put({}, checkpoint(), metadata, {})).rejects.toThrow(/thread_id/);
    await expect(saver.put({ configurable: { thread_id: 42 } }, checkpoint(), metadata, {})).rejects.toThrow(
      /thread_id must be a non-empty string, got number/,
    );
    expect(await countRows(saver)).toBe(before);
  });

  it("rejects putWrites without a checkpoint_id and writes nothing", async () => {
    const config = await saver.put({ configurable: { thread_id: "t-writes" } }, checkpoint(), metadata, {});
    await expect(saver.putWrites({ configurable: { thread_id: "t-writes" } }, [["a", 1]], "task")).rejects.toThrow(
      /checkpoint_id/,
    );
    expect((await saver.getTuple(config))?.pendingWrites).toEqual([]);
  });

  it("rejects a value the serializer cannot encode, and stores nothing of that put", async () => {
    const bad = checkpoint({ ok: 1, broken: () => "no" });
    await expect(
      saver.put({ configurable: { thread_id: "t-serde" } }, bad, metadata, { ok: "1", broken: "1" }),
    ).rejects.toThrow(/cannot serialize/);
    expect(await saver.getTuple({ configurable: { thread_id: "t-serde" } })).toBeUndefined();
    const config = await saver.put({ configurable: { thread_id: "t-serde" } }, checkpoint(), metadata, {});
    await expect(
      saver.putWrites(
        config,
        [
          ["a", 1],
          ["b", Symbol("s")],
        ],
        "task",
      ),
    ).rejects.toThrow(/cannot serialize/);
    expect((await saver.getTuple(config))?.pendingWrites).toEqual([]);
  });

  it("rejects metadata that is not an object", async () => {
    await expect(
      saver.put({ configurable: { thread_id: "t-meta" } }, checkpoint(), "x" as unknown as CheckpointMetadata, {}),
    ).rejects.toThrow(/metadata must be an object/);
    expect(await saver.getTuple({ configurable: { thread_id: "t-meta" } })).toBeUndefined();
  });

  it("stores ids of 255 characters (multi-byte too) and deeply nested namespaces", async () => {
    const threadId = "é".repeat(100) + "t".repeat(154) + "😀".slice(0, 1).replace(/./u, "x");
    expect([...threadId].length).toBe(255);
    const ns = Array.from({ length: 12 }, (_, i) => `node_${i}_${"n".repeat(20)}:${uuid6(-1)}`).join("|");
    const saved = checkpoint({ messages: ["hello"] });
    saved.id = `${uuid6(-1)}-${"c".repeat(255 - 37)}`;
    expect(saved.id.length).toBe(255);
    const config = await saver.put({ configurable: { thread_id: threadId, checkpoint_ns: ns } }, saved, metadata, {
      messages: "1",
    });
    const taskId = "τ".repeat(255);
    await saver.putWrites(config, [["messages", "w"]], taskId);
    const tuple = await saver.getTuple(config);
    expect(tuple?.checkpoint).toEqual(saved);
    expect(tuple?.pendingWrites).toEqual([[taskId, "messages", "w"]]);
    const listed = [];
    for await (const item of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: ns } }))
      listed.push(item);
    expect(listed).toHaveLength(1);
    await expect(
      saver.put({ configurable: { thread_id: "x".repeat(256) } }, checkpoint(), metadata, {}),
    ).rejects.toThrow(/longer than 255/);
  });

  it("keeps ids that differ only in case or trailing spaces apart", async () => {
    const ids = ["Case", "case", "case ", "case  ", "cáse"];
    for (const id of ids) {
      await saver.put({ configurable: { thread_id: id } }, checkpoint({ v: id }), metadata, { v: "1" });
    }
    for (const id of ids) {
      const tuple = await saver.getTuple({ configurable: { thread_id: id } });
      expect(tuple?.checkpoint.channel_values).toEqual({ v: id });
      expect(tuple?.config.configurable?.thread_id).toBe(id);
    }
  });

  it("stores metadata nested as deep as the database's JSON holds, and refuses one level more, writing nothing", async () => {
    // MariaDB's JSON refuses 32 levels of objects and arrays, SQLite's 1001; PostgreSQL is held to the same 1000.
    const most = { sqlite: 1000, postgres: 1000, mysql: 31 }[dialect];
    const nested = (levels: number) => {
      let value: unknown = "leaf";
      for (let i = 0; i < levels; i++) value = { a: value };
      return value;
    };
    // The metadata object itself is the first level.
    const deepest = { ...metadata, deep: nested(most - 1) };
    const config = await saver.put({ configurable: { thread_id: "t-deep" } }, checkpoint(), deepest, {});
    expect((await saver.getTuple(config))?.metadata).toEqual(deepest);
    const tooDeep = { ...metadata, deep: nested(most) };
    await expect(saver.put({ configurable: { thread_id: "t-too-deep" } }, checkpoint(), tooDeep, {})).rejects.toThrow(
      new RegExp(`metadata\\.deep\\.a.* more than ${most} levels deep`),
    );
    // Deep enough to exhaust the stack of a recursive walk: still our error.
    const deepest50k = { ...metadata, deep: nested(50_000) };
    await expect(
      saver.put({ configurable: { thread_id: "t-too-deep" } }, checkpoint(), deepest50k, {}),
    ).rejects.toThrow(InvalidInputError);
    expect(await saver.getTuple({ configurable: { thread_id: "t-too-deep" } })).toBeUndefined();
  });

  it("stores channel values and pending writes nested as deep as the serializer documents (1000 levels)", async () => {
    const nested = (levels: number) => {
      let value: unknown = "leaf";
      for (let i = 0; i < levels; i++) value = i % 2 === 0 ? { a: value } : [value];
      return value;
    };
    const deep = nested(1000);
    const config = await saver.put({ configurable: { thread_id: "t-deep-value" } }, checkpoint({ deep }), metadata, {
      deep: "1",
    });
    await saver.putWrites(config, [["deep", deep]], "task");
    const tuple = await saver.getTuple(config);
    expect(tuple?.checkpoint.channel_values.deep).toEqual(deep);
    expect(tuple?.pendingWrites).toEqual([["task", "deep", deep]]);
  });

  it("refuses a numeric channel version that cannot name its value (NaN, Infinity, exponent form), writing nothing", async () => {
    // A value's row is found through the version's text in the checkpoint's JSON copy of
    // channel_versions: NaN and Infinity become null there, and PostgreSQL prints 1e21 as
    // 1000000000000000000000, so the value was stored and then never read back.
    for (const version of [Number.NaN, Number.POSITIVE_INFINITY, 1e21, 1e-7]) {
      const threadId = `t-version-${String(version)}`;
      const bad = { ...checkpoint({ a: "value" }), channel_versions: { a: version } };
      await expect(saver.put({ configurable: { thread_id: threadId } }, bad, metadata, { a: version })).rejects.toThrow(
        new RegExp(`version of channel "a" must be .*, got ${String(version).replace("+", "\\+")}`),
      );
      // Also when only the checkpoint names it (its value stored by an earlier put).
      await expect(saver.put({ configurable: { thread_id: threadId } }, bad, metadata, {})).rejects.toThrow(
        InvalidInputError,
      );
      expect(await saver.getTuple({ configurable: { thread_id: threadId } })).toBeUndefined();
    }
    // Numbers as other savers write them still work, and are read back with their values.
    for (const version of [0, 7, 1.5, 2 ** 60]) {
      const good = { ...checkpoint({ a: "value" }), channel_versions: { a: version } };
      const config = await saver.put({ configurable: { thread_id: `t-version-ok-${version}` } }, good, metadata, {
        a: version,
      });
      expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ a: "value" });
    }
  });

  it("lets a second saver instance read what the first wrote", async () => {
    const config: RunnableConfig = await saver.put(
      { configurable: { thread_id: "t-shared" } },
      checkpoint({ messages: [1, 2] }),
      metadata,
      { messages: "1" },
    );
    await saver.putWrites(config, [["messages", 3]], "task-1");
    const other = await DrizzleSaver.fromUrl(url);
    try {
      const tuple = await other.getTuple({ configurable: { thread_id: "t-shared" } });
      expect(tuple?.checkpoint.channel_values).toEqual({ messages: [1, 2] });
      expect(tuple?.pendingWrites).toEqual([["task-1", "messages", 3]]);
    } finally {
      await other.close();
    }
  });
});

describe("DrizzleSaver.fromUrl", () => {
  it("rejects unknown schemes with a clear error", async () => {
    await expect(DrizzleSaver.fromUrl("redis://localhost:6379")).rejects.toThrow(
      /unsupported database URL scheme "redis:/,
    );
    await expect(DrizzleSaver.fromUrl("")).rejects.toThrow(/URL is required/);
  });

  it("opens SQLite from :memory:, file: and a plain path", async () => {
    for (const url of [":memory:", "file::memory:"]) {
      const saver = await DrizzleSaver.fromUrl(url);
      await saver.setup();
      await saver.put({ configurable: { thread_id: "m" } }, checkpoint(), metadata, {});
      expect(await saver.getTuple({ configurable: { thread_id: "m" } })).toBeDefined();
      await saver.close();
    }
  });

  it("refuses a database object it does not know", () => {
    expect(() => new DrizzleSaver({} as never)).toThrow(
      /supported drivers: postgres, pg, @electric-sql\/pglite, mysql2, better-sqlite3, @libsql\/client/,
    );
  });
});
