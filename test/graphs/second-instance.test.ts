import { HumanMessage } from "@langchain/core/messages";
import { Command, MemorySaver } from "@langchain/langgraph";
import { DrizzleSaver } from "../../src/index.js";
import {
  buildApprovalGraph,
  buildChatGraph,
  buildTripGraph,
  CHAT_TURNS,
  history,
  newThread,
  normalHistory,
  normalSnapshot,
  URL_TARGETS,
  useFreshSaver,
} from "./graphs.js";

describe.each(URL_TARGETS)("a second saver instance on %s", (dialect) => {
  const db = useFreshSaver(dialect);
  let second: DrizzleSaver;
  beforeAll(async () => {
    second = await DrizzleSaver.fromUrl(db.url);
  });
  afterAll(async () => {
    await second?.close();
  });

  it("reads the chat state and history the first instance wrote, and continues it", async () => {
    const firstGraph = buildChatGraph(db.saver);
    const secondGraph = buildChatGraph(second);
    const config = newThread("second-chat");
    for (const turn of CHAT_TURNS) await firstGraph.invoke({ messages: [turn] }, config);

    const firstState = await firstGraph.getState(config);
    const secondState = await secondGraph.getState(config);
    // Same database, so the snapshots are identical, ids and timestamps included.
    expect(secondState).toEqual(firstState);
    expect(secondState.values.messages).toHaveLength(8);
    expect(await history(secondGraph, config)).toEqual(await history(firstGraph, config));

    // The second instance continues the thread; the first sees the new turn.
    const next = await secondGraph.invoke({ messages: [new HumanMessage("from the second instance")] }, config);
    expect(next.messages.slice(-2).map((m) => [m.getType(), m.content])).toEqual([
      ["human", "from the second instance"],
      ["ai", "echo #9: from the second instance"],
    ]);
    expect(await firstGraph.getState(config)).toEqual(await secondGraph.getState(config));

    // And the whole exchange matches MemorySaver running the same four turns.
    const memoryGraph = buildChatGraph(new MemorySaver());
    const memoryConfig = newThread("second-chat-memory");
    for (const turn of [...CHAT_TURNS, new HumanMessage("from the second instance")]) {
      await memoryGraph.invoke({ messages: [turn] }, memoryConfig);
    }
    expect(normalSnapshot(await firstGraph.getState(config))).toEqual(
      normalSnapshot(await memoryGraph.getState(memoryConfig)),
    );
    expect(await normalHistory(secondGraph, config)).toEqual(await normalHistory(memoryGraph, memoryConfig));
  });

  it("sees an interrupt the first instance wrote and resumes it", async () => {
    const firstCounter = { review: 0 };
    const secondCounter = { review: 0 };
    const firstGraph = buildApprovalGraph(db.saver, firstCounter);
    const secondGraph = buildApprovalGraph(second, secondCounter);
    const config = newThread("second-approval");
    await firstGraph.invoke({ request: "the memo" }, config);

    const paused = await secondGraph.getState(config);
    expect(paused).toEqual(await firstGraph.getState(config));
    expect(paused.next).toEqual(["review"]);
    expect(paused.tasks[0].interrupts.map((i) => i.value)).toEqual([
      { question: "approve the memo?", draft: ["drafted the memo"] },
    ]);

    const done = await secondGraph.invoke(new Command({ resume: { approved: true, note: "from elsewhere" } }), config);
    expect(done).toEqual({
      request: "the memo",
      decision: "approved: from elsewhere",
      log: ["drafted the memo", "reviewed", "published (approved: from elsewhere)"],
    });
    expect({ firstCounter, secondCounter }).toEqual({ firstCounter: { review: 1 }, secondCounter: { review: 1 } });
    expect(await firstGraph.getState(config)).toEqual(await secondGraph.getState(config));
    expect((await firstGraph.getState(config)).values).toEqual(done);
  });

  it("reads an interrupted subgraph's namespaced state the first instance wrote", async () => {
    const firstGraph = buildTripGraph(db.saver, { confirm: 0 });
    const secondGraph = buildTripGraph(second, { confirm: 0 });
    const config = newThread("second-trip");
    await firstGraph.invoke({ destination: "Lima" }, config);

    const fromFirst = await firstGraph.getState(config, { subgraphs: true });
    const fromSecond = await secondGraph.getState(config, { subgraphs: true });
    expect(fromSecond).toEqual(fromFirst);
    expect(normalSnapshot(fromSecond).tasks[0].subgraph?.values).toEqual({
      destination: "Lima",
      booking: ["quote for Lima"],
    });

    const done = await secondGraph.invoke(new Command({ resume: "1C" }), config);
    expect(done.booking).toEqual(["quote for Lima", "seat 1C confirmed", "ticket #2 issued"]);
    expect(await firstGraph.getState(config, { subgraphs: true })).toEqual(
      await secondGraph.getState(config, { subgraphs: true }),
    );
  });
});
