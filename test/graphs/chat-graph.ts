/**
 * The chat graph of the end-to-end tests and of the real-graph benchmark (bench/graph.ts):
 * messages accumulate across turns, and the bot calls a tool when a turn starts with
 * "lookup ". No vitest here, so the benchmark can load it outside the test runner.
 */
import { AIMessage, HumanMessage, isAIMessage, isToolMessage, ToolMessage } from "@langchain/core/messages";
import { type BaseCheckpointSaver, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

export function buildChatGraph(checkpointer: BaseCheckpointSaver) {
  const bot = (state: typeof MessagesAnnotation.State) => {
    const last = state.messages[state.messages.length - 1];
    const count = state.messages.length;
    if (isToolMessage(last)) {
      return { messages: [new AIMessage({ content: `the tool said ${String(last.content)} (${count} messages)` })] };
    }
    const text = String(last.content);
    if (text.startsWith("lookup ")) {
      return {
        messages: [
          new AIMessage({
            content: "",
            tool_calls: [{ id: `call_${count}`, name: "lookup", args: { query: text.slice(7), n: count } }],
          }),
        ],
      };
    }
    return { messages: [new AIMessage({ content: `echo #${count}: ${text}`, name: "echo-bot" })] };
  };
  const tool = (state: typeof MessagesAnnotation.State) => {
    const last = state.messages[state.messages.length - 1];
    const calls = isAIMessage(last) ? (last.tool_calls ?? []) : [];
    return {
      messages: calls.map(
        (call) =>
          new ToolMessage({
            content: `result for ${String(call.args.query)}`,
            tool_call_id: call.id ?? "",
            name: call.name,
          }),
      ),
    };
  };
  const route = (state: typeof MessagesAnnotation.State) => {
    const last = state.messages[state.messages.length - 1];
    return isAIMessage(last) && (last.tool_calls?.length ?? 0) > 0 ? "tool" : END;
  };
  return new StateGraph(MessagesAnnotation)
    .addNode("bot", bot)
    .addNode("tool", tool)
    .addEdge(START, "bot")
    .addConditionalEdges("bot", route, ["tool", END])
    .addEdge("tool", "bot")
    .compile({ checkpointer });
}

export const CHAT_TURNS = ["hello", "lookup weather in Paris", "thanks"].map((text) => new HumanMessage(text));
