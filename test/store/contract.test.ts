/**
 * DrizzleStore keeps LangGraph's BaseStore contract on each database: labels and keys
 * round-trip exactly and prefixes match whole labels, items are copies, createdAt stays
 * and updatedAt moves, a batch is one unit whose reads see the state before it, bad
 * input writes nothing, and listNamespaces with wildcards, suffixes and maxDepth.
 */
import type { Item } from "@langchain/langgraph-checkpoint";
import { InvalidNamespaceError as LangGraphInvalidNamespaceError } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CheckpointSaverError, InvalidInputError, InvalidNamespaceError } from "../../src/index.js";
import { openRaw, type RawDatabase } from "../helpers/raw.js";
import { DIALECTS, freshStore, manualClock, type OpenStore } from "../helpers/stores.js";

const HOSTILE = [
  "Alice",
  "alice",
  "a_b",
  "a%b",
  "a\\b",
  "it's",
  "x y",
  "日本語",
  "😀",
  "-",
  "/",
  "acme\u0001",
  "ß",
  "*",
];

const keysOf = (items: { key: string }[]) => items.map((item) => item.key).sort();

describe.each(DIALECTS)("DrizzleStore contract on %s", (dialect) => {
  let open: OpenStore;
  let raw: RawDatabase;
  const clock = manualClock();
  beforeAll(async () => {
    open = await freshStore(dialect, { clock: clock.now });
    raw = await openRaw(dialect, open.url as string);
  });
  afterAll(async () => {
    await raw?.close();
    await open?.close();
  });

  it("round-trips every label and key exactly, and returns copies", async () => {
    const { store } = open;
    for (const label of HOSTILE) {
      await store.put(["labels", label], label, { label, nested: { list: [1, "two", null] } });
    }
    for (const label of HOSTILE) {
      const item = await store.get(["labels", label], label);
      expect(item?.namespace).toEqual(["labels", label]);
      expect(item?.key).toBe(label);
      expect(item?.value).toEqual({ label, nested: { list: [1, "two", null] } });
      // A search under the exact namespace finds that item only.
      expect(keysOf(await store.search(["labels", label]))).toEqual([label]);
    }
    const listed = await store.listNamespaces({ prefix: ["labels"], limit: 100 });
    expect(listed.map((ns) => ns[1]).sort()).toEqual([...HOSTILE].sort());
    // Mutating what was returned changes nothing stored, nor a later read.
    const first = await store.get(["labels", "a_b"], "a_b");
    if (!first) throw new Error("the item is missing");
    (first.value.nested as { list: unknown[] }).list.push("changed");
    expect((await store.get(["labels", "a_b"], "a_b"))?.value.nested).toEqual({ list: [1, "two", null] });
  });

  it("matches prefixes by whole labels, case and all", async () => {
    const { store } = open;
    await store.put(["tenant", "acme"], "mine", { v: 1 });
    await store.put(["tenant", "acme", "deep"], "deep", { v: 2 });
    await store.put(["tenant", "acme-corp"], "theirs", { v: 3 });
    await store.put(["tenant", "acme/"], "slash", { v: 4 });
    await store.put(["tenant", "acm"], "short", { v: 5 });
    await store.put(["tenant", "Acme"], "upper", { v: 6 });
    expect(keysOf(await store.search(["tenant", "acme"]))).toEqual(["deep", "mine"]);
    expect(keysOf(await store.search(["tenant", "acme", "deep"]))).toEqual(["deep"]);
    expect(keysOf(await store.search(["tenant", "Acme"]))).toEqual(["upper"]);
    expect(keysOf(await store.search(["tenant", "acm"]))).toEqual(["short"]);
    expect(await store.get(["tenant", "ACME"], "mine")).toBeNull();
    expect(await store.get(["tenant", "acme"], "MINE")).toBeNull();
    expect(await store.listNamespaces({ prefix: ["tenant", "acme"] })).toEqual([
      ["tenant", "acme"],
      ["tenant", "acme", "deep"],
    ]);
    // _ % \ are characters, not patterns.
    await store.put(["pat", "a_c"], "k", { v: 1 });
    await store.put(["pat", "abc"], "k", { v: 2 });
    await store.put(["pat", "a%"], "k", { v: 3 });
    await store.put(["pat", "a%z"], "k", { v: 4 });
    expect((await store.search(["pat", "a_c"])).map((i) => i.value.v)).toEqual([1]);
    expect((await store.search(["pat", "a%"])).map((i) => i.value.v)).toEqual([3]);
  });

  it("keeps createdAt and moves updatedAt when an item is replaced", async () => {
    const { store } = open;
    const created = clock.tick(1000);
    await store.put(["times"], "k", { v: 1 });
    const updated = clock.tick(5000);
    await store.put(["times"], "k", { v: 2 });
    const item = await store.get(["times"], "k");
    expect(item?.value).toEqual({ v: 2 });
    expect(item?.createdAt.getTime()).toBe(created);
    expect(item?.updatedAt.getTime()).toBe(updated);
    await store.delete(["times"], "k");
    expect(await store.get(["times"], "k")).toBeNull();
  });

  it("runs a batch as one unit: reads see the state before it, the last put to a key wins", async () => {
    const { store } = open;
    await store.put(["batch"], "k", { v: "before" });
    const results: unknown[] = await store.batch([
      { namespace: ["batch"], key: "k", value: { v: 1 } },
      { namespace: ["batch"], key: "k" },
      { namespacePrefix: ["batch"], filter: { v: "before" }, limit: 10, offset: 0 },
      { namespace: ["batch"], key: "k", value: { v: 2 } },
      { namespace: ["batch"], key: "new", value: { v: 3 } },
      { namespace: ["batch"], key: "new" },
      { matchConditions: [{ matchType: "prefix", path: ["batch"] }], limit: 10, offset: 0 },
    ]);
    expect(results[0]).toBeUndefined();
    expect((results[1] as Item | null)?.value).toEqual({ v: "before" });
    expect(keysOf(results[2] as { key: string }[])).toEqual(["k"]);
    expect(results[5]).toBeNull();
    expect(results[6]).toEqual([["batch"]]);
    expect((await store.get(["batch"], "k"))?.value).toEqual({ v: 2 });
    expect((await store.get(["batch"], "new"))?.value).toEqual({ v: 3 });
  });

  it("writes nothing of a batch that fails half way in the database", async () => {
    const { store } = open;
    await store.put(["fail"], "kept", { v: 1 });
    await failInsertsOf(raw, "boom");
    await expect(
      store.batch([
        { namespace: ["fail"], key: "kept", value: null },
        { namespace: ["fail"], key: "added", value: { v: 2 } },
        { namespace: ["fail"], key: "boom", value: { v: 3 } },
      ]),
    ).rejects.toThrow();
    expect((await store.get(["fail"], "kept"))?.value).toEqual({ v: 1 });
    expect(await store.get(["fail"], "added")).toBeNull();
  });

  it("refuses bad input with a clear error before writing anything", async () => {
    const { store } = open;
    const attempt = (operations: unknown[]) => store.batch(operations as never);
    const put = { namespace: ["bad"], key: "first", value: { v: 1 } };
    await expect(attempt([put, { namespace: ["bad", "a.b"], key: "k", value: { v: 1 } }])).rejects.toThrow(
      InvalidNamespaceError,
    );
    await expect(attempt([put, { namespace: ["bad", ""], key: "k", value: { v: 1 } }])).rejects.toThrow(
      InvalidNamespaceError,
    );
    await expect(attempt([put, { namespace: ["langgraph"], key: "k", value: { v: 1 } }])).rejects.toThrow(
      InvalidNamespaceError,
    );
    // Code written for InMemoryStore catches LangGraph's class; ours is that class and still ours.
    const namespaceError = await attempt([put, { namespace: ["bad", "a:b"], key: "k", value: { v: 1 } }]).catch(
      (error: unknown) => error,
    );
    for (const kind of [LangGraphInvalidNamespaceError, InvalidNamespaceError, InvalidInputError, CheckpointSaverError])
      expect(namespaceError).toBeInstanceOf(kind);
    expect(new InvalidInputError("x")).not.toBeInstanceOf(InvalidNamespaceError);
    expect(new LangGraphInvalidNamespaceError("x")).not.toBeInstanceOf(InvalidInputError);
    await expect(attempt([put, { namespace: ["bad"], key: "k", value: [1, 2] }])).rejects.toThrow(InvalidInputError);
    await expect(attempt([put, { namespace: ["bad"], key: "k\u0000", value: { v: 1 } }])).rejects.toThrow(
      InvalidInputError,
    );
    await expect(attempt([put, { namespace: ["bad"], key: "k", value: { s: "nul\u0000" } }])).rejects.toThrow(
      InvalidInputError,
    );
    await expect(
      attempt([put, { namespacePrefix: ["bad"], filter: { v: { $regex: "x" } }, limit: 1, offset: 0 }]),
    ).rejects.toThrow(/unknown operator \$regex/);
    await expect(attempt([put, { namespacePrefix: ["bad"], limit: -1, offset: 0 }])).rejects.toThrow(InvalidInputError);
    expect(await store.search(["bad"])).toEqual([]);
  });

  it("refuses a value whose JSON is not an object (a Date, a toJSON) and writes nothing", async () => {
    const { store } = open;
    const attempt = (value: unknown) =>
      store.batch([
        { namespace: ["tojson"], key: "first", value: { v: 1 } },
        { namespace: ["tojson"], key: "k", value: value as Record<string, unknown> },
      ]);
    await expect(attempt(new Date(0))).rejects.toThrow(InvalidInputError);
    await expect(attempt({ toJSON: () => [1, 2] })).rejects.toThrow(InvalidInputError);
    await expect(attempt({ toJSON: () => "text" })).rejects.toThrow(InvalidInputError);
    await expect(attempt({ toJSON: () => undefined })).rejects.toThrow(InvalidInputError);
    expect(await store.search(["tojson"])).toEqual([]);
    // A toJSON that gives an object is stored as that object.
    await store.put(["tojson"], "k", { toJSON: () => ({ as: "json" }) });
    expect((await store.get(["tojson"], "k"))?.value).toEqual({ as: "json" });
  });

  it("refuses a bad filter even where the search reads nothing (limit 0), writing nothing", async () => {
    const { store } = open;
    await expect(
      store.batch([
        { namespace: ["filter-checked"], key: "k", value: { v: 1 } },
        { namespacePrefix: ["filter-checked"], filter: { v: { $regex: "x" } }, limit: 0, offset: 0 },
      ]),
    ).rejects.toThrow(/unknown operator \$regex/);
    await expect(store.search(["filter-checked"], { filter: "v" as never, limit: 0 })).rejects.toThrow(
      InvalidInputError,
    );
    expect(await store.search(["filter-checked"])).toEqual([]);
  });

  it("lists namespaces with prefixes, suffixes, wildcards, maxDepth, limit and offset", async () => {
    const { store } = open;
    for (const ns of [
      ["docs", "users", "alice", "notes"],
      ["docs", "users", "bob", "notes"],
      ["docs", "users", "bob", "prefs"],
      ["docs", "teams", "core"],
      ["docs-archive", "x"],
    ]) {
      await store.put(ns, "k", { v: 1 });
    }
    expect(await store.listNamespaces({ prefix: ["docs"] })).toEqual([
      ["docs", "teams", "core"],
      ["docs", "users", "alice", "notes"],
      ["docs", "users", "bob", "notes"],
      ["docs", "users", "bob", "prefs"],
    ]);
    expect(await store.listNamespaces({ prefix: ["docs", "*", "bob"] })).toEqual([
      ["docs", "users", "bob", "notes"],
      ["docs", "users", "bob", "prefs"],
    ]);
    expect(await store.listNamespaces({ prefix: ["docs"], suffix: ["notes"] })).toEqual([
      ["docs", "users", "alice", "notes"],
      ["docs", "users", "bob", "notes"],
    ]);
    expect(await store.listNamespaces({ prefix: ["docs"], suffix: ["*", "notes"] })).toHaveLength(2);
    expect(await store.listNamespaces({ prefix: ["docs"], maxDepth: 2 })).toEqual([
      ["docs", "teams"],
      ["docs", "users"],
    ]);
    expect(await store.listNamespaces({ prefix: ["docs"], limit: 2, offset: 1 })).toEqual([
      ["docs", "users", "alice", "notes"],
      ["docs", "users", "bob", "notes"],
    ]);
    expect(await store.listNamespaces({ prefix: ["docs", "nobody"] })).toEqual([]);
  });
});

/** A trigger that makes the database refuse inserting an item with this key. */
async function failInsertsOf(raw: RawDatabase, key: string): Promise<void> {
  if (raw.dialect === "sqlite") {
    await raw.query(
      `create trigger fail_store before insert on store_items when new.item_key = '${key}' begin select raise(abort, 'refused by test trigger'); end`,
    );
  } else if (raw.dialect === "postgres") {
    await raw.query(
      `create function fail_store() returns trigger language plpgsql as $$ begin if new.item_key = '${key}' then raise exception 'refused by test trigger'; end if; return new; end $$`,
    );
    await raw.query(
      "create trigger fail_store before insert on store_items for each row execute function fail_store()",
    );
  } else {
    await raw.query(
      `create trigger fail_store before insert on store_items for each row begin if new.item_key = '${key}' then signal sqlstate '45000' set message_text = 'refused by test trigger'; end if; end`,
    );
  }
}
