import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { type BaseCheckpointSaver, MemorySaver } from "@langchain/langgraph";
import {
  buildChatGraph,
  CHAT_TURNS,
  GRAPH_TARGETS,
  history,
  newThread,
  normalHistory,
  normalize,
  normalSnapshot,
  useFreshSaver,
} from "./graphs.js";

async function runChat(checkpointer: BaseCheckpointSaver) {
  const graph = buildChatGraph(checkpointer);
  const config = newThread("chat");
  const results = [];
  const statesAfterTurn = [];
  for (const turn of CHAT_TURNS) {
    results.push(await graph.invoke({ messages: [turn] }, config));
    statesAfterTurn.push(await graph.getState(config));
  }
  const state = await graph.getState(config);
  return { graph, config, results, statesAfterTurn, state, history: await normalHistory(graph, config) };
}

function serialisedWithoutId(message: BaseMessage): unknown {
  const json = JSON.parse(JSON.stringify(message)) as { kwargs: Record<string, unknown> };
  expect(typeof json.kwargs.id).toBe("string");
  delete json.kwargs.id;
  return json;
}

const EXPECTED_MESSAGES = [
  { type: "human", content: "hello" },
  { type: "ai", content: "echo #1: hello", name: "echo-bot", toolCalls: [] },
  { type: "human", content: "lookup weather in Paris" },
  { type: "ai", content: "", toolCalls: [{ id: "call_3", name: "lookup", args: { query: "weather in Paris", n: 3 } }] },
  { type: "tool", content: "result for weather in Paris", name: "lookup", toolCallId: "call_3" },
  { type: "ai", content: "the tool said result for weather in Paris (5 messages)", toolCalls: [] },
  { type: "human", content: "thanks" },
  { type: "ai", content: "echo #7: thanks", name: "echo-bot", toolCalls: [] },
];

describe.each(GRAPH_TARGETS)("multi-turn chat memory on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("accumulates messages over three turns exactly like MemorySaver", async () => {
    const drizzle = await runChat(db.saver);
    const memory = await runChat(new MemorySaver());

    expect(normalize(drizzle.state.values)).toEqual({ messages: EXPECTED_MESSAGES });
    expect(drizzle.state.next).toEqual([]);
    expect(drizzle.results.map(normalize)).toEqual(memory.results.map(normalize));
    expect(drizzle.statesAfterTurn.map(normalSnapshot)).toEqual(memory.statesAfterTurn.map(normalSnapshot));
    expect(normalSnapshot(drizzle.state)).toEqual(normalSnapshot(memory.state));
    // The full serialised form of every message matches too (all fields but the generated id).
    expect(drizzle.state.values.messages.map(serialisedWithoutId)).toEqual(
      memory.state.values.messages.map(serialisedWithoutId),
    );

    // Every turn saw the earlier ones: the state grows 2, 6, 8 messages.
    expect(drizzle.statesAfterTurn.map((s) => s.values.messages.length)).toEqual([2, 6, 8]);

    // Turn 1 + turn 2 (input, bot, tool, bot) + turn 3: each turn has input, loop and end checkpoints.
    expect(drizzle.history.length).toBe(memory.history.length);
    expect(drizzle.history).toEqual(memory.history);
    expect(drizzle.history.map((s) => [s.source, s.step])).toEqual([
      ["loop", 9],
      ["loop", 8],
      ["input", 7],
      ["loop", 6],
      ["loop", 5],
      ["loop", 4],
      ["loop", 3],
      ["input", 2],
      ["loop", 1],
      ["loop", 0],
      ["input", -1],
    ]);
  });

  it("gives back real message instances with stable ids", async () => {
    const { graph, config, results, state } = await runChat(db.saver);
    const messages: BaseMessage[] = state.values.messages;
    const classes = [HumanMessage, AIMessage, HumanMessage, AIMessage, ToolMessage, AIMessage, HumanMessage, AIMessage];
    expect(messages).toHaveLength(classes.length);
    messages.forEach((message, i) => {
      expect(message).toBeInstanceOf(classes[i]);
      expect(message._getType()).toBe(EXPECTED_MESSAGES[i].type);
      expect(typeof message.id).toBe("string");
    });
    const toolCallMessage = messages[3];
    if (!(toolCallMessage instanceof AIMessage)) throw new Error("expected an AIMessage");
    expect(toolCallMessage.tool_calls).toEqual([
      { id: "call_3", name: "lookup", args: { query: "weather in Paris", n: 3 } },
    ]);

    // The messages of turn 1, read back from the database in turns 2 and 3, keep their ids.
    const firstIds = results[0].messages.map((m) => m.id);
    expect(messages.slice(0, 2).map((m) => m.id)).toEqual(firstIds);
    expect(results[2].messages.map((m) => m.id)).toEqual(messages.map((m) => m.id));

    // Every snapshot in the history holds message instances too.
    for (const snapshot of await history(graph, config)) {
      const snapshotMessages: BaseMessage[] = snapshot.values.messages ?? [];
      for (const message of snapshotMessages) {
        expect([HumanMessage, AIMessage, ToolMessage].some((cls) => message instanceof cls)).toBe(true);
      }
    }
  });

  it("keeps threads apart, even when their ids differ only by case or accents", async () => {
    const graph = buildChatGraph(db.saver);
    const base = newThread("chat").configurable.thread_id;
    const a = { configurable: { thread_id: `${base}-Éa` } };
    const b = { configurable: { thread_id: `${base}-éa` } };
    const c = { configurable: { thread_id: `${base}-ÉA` } };
    await graph.invoke({ messages: [new HumanMessage("first thread 👋")] }, a);
    await graph.invoke({ messages: [new HumanMessage("second thread — ünïcödé")] }, b);
    await graph.invoke({ messages: [new HumanMessage("again")] }, a);
    expect(normalize((await graph.getState(a)).values)).toEqual({
      messages: [
        { type: "human", content: "first thread 👋" },
        { type: "ai", content: "echo #1: first thread 👋", name: "echo-bot", toolCalls: [] },
        { type: "human", content: "again" },
        { type: "ai", content: "echo #3: again", name: "echo-bot", toolCalls: [] },
      ],
    });
    expect(normalize((await graph.getState(b)).values)).toEqual({
      messages: [
        { type: "human", content: "second thread — ünïcödé" },
        { type: "ai", content: "echo #1: second thread — ünïcödé", name: "echo-bot", toolCalls: [] },
      ],
    });
    const empty = await graph.getState(c);
    expect(empty.values).toEqual({});
    expect(empty.next).toEqual([]);
    expect(await history(graph, c)).toEqual([]);
  });
});
