/**
 * A real LangGraph graph with our saver and our store on one database: a memory written
 * by a node in one thread is read by a node in another (through LangGraph's batched
 * store wrapper, `config.store`), and is in the store afterwards; the same with both
 * encrypting, where the table holds none of it.
 */
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore } from "../../src/index.js";
import { TEST_ENCRYPTION } from "../encryption/keys.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { rawQuery } from "../helpers/raw.js";

const State = Annotation.Root({
  user: Annotation<string>,
  said: Annotation<string>,
  reply: Annotation<string>,
});

function buildGraph(checkpointer: DrizzleSaver, store: DrizzleStore) {
  return new StateGraph(State)
    .addNode("remember", async (state, config: LangGraphRunnableConfig) => {
      const match = /my name is (\w+)/i.exec(state.said);
      if (match) await config.store?.put(["users", state.user, "memories"], "name", { name: match[1] });
      return {};
    })
    .addNode("answer", async (state, config: LangGraphRunnableConfig) => {
      const [memory] =
        (await config.store?.search(["users", state.user, "memories"], { filter: { name: { $exists: true } } })) ?? [];
      return { reply: memory ? `hello again, ${memory.value.name}` : "hello, stranger" };
    })
    .addEdge(START, "remember")
    .addEdge("remember", "answer")
    .addEdge("answer", END)
    .compile({ checkpointer, store });
}

const CASES: [DialectName, string][] = DIALECTS.flatMap((dialect): [DialectName, string][] => [
  [dialect, "in the clear"],
  [dialect, "encrypted"],
]);

describe.each(CASES)("a graph with the store across two threads on %s, %s", (dialect, mode) => {
  let saver: DrizzleSaver;
  let store: DrizzleStore;
  let url: string;
  const encryption = mode === "encrypted" ? TEST_ENCRYPTION : undefined;
  beforeAll(async () => {
    url = await freshDatabaseUrl(dialect);
    saver = await DrizzleSaver.fromUrl(url, { encryption });
    store = await DrizzleStore.fromUrl(url, { encryption });
    await store.setup();
  });
  afterAll(async () => {
    await store?.close();
    await saver?.close();
  });

  it("remembers in one thread what it learned in another", async () => {
    const graph = buildGraph(saver, store);
    const first = { configurable: { thread_id: "thread-1" } };
    const second = { configurable: { thread_id: "thread-2" } };
    expect((await graph.invoke({ user: "u1", said: "my name is Ada" }, first)).reply).toBe("hello again, Ada");
    expect((await graph.invoke({ user: "u1", said: "who am I?" }, second)).reply).toBe("hello again, Ada");
    expect((await graph.invoke({ user: "u2", said: "who am I?" }, second)).reply).toBe("hello, stranger");
    expect((await store.get(["users", "u1", "memories"], "name"))?.value).toEqual({ name: "Ada" });
    // Each thread's state is the saver's, apart from the store.
    expect((await graph.getState(first)).values.said).toBe("my name is Ada");
    expect((await graph.getState(second)).values.user).toBe("u2");
    const rows = await rawQuery(dialect, url, "select * from store_items");
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows).includes("Ada")).toBe(encryption === undefined);
  });
});
