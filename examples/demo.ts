/**
 * A LangGraph graph that persists to an SQLite file, stops at an interrupt, is
 * resumed by a second saver instance (as a new process would), and prints its history;
 * then a graph with a store remembers in one thread what a user said in another.
 *   npm run demo            (writes ./demo.db; run it again to start a new thread)
 */
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import {
  Command,
  END,
  interrupt,
  type LangGraphRunnableConfig,
  MessagesAnnotation,
  START,
  StateGraph,
} from "@langchain/langgraph";
import { DrizzleSaver, DrizzleStore } from "../src/index.js";

const file = process.argv[2] ?? "demo.db";

function buildGraph() {
  return new StateGraph(MessagesAnnotation)
    .addNode("draft", (state) => {
      const question = String(state.messages.at(-1)?.content ?? "");
      return { messages: [new AIMessage(`Draft answer to "${question}"`)] };
    })
    .addNode("review", () => {
      // Pauses the run; the value passed to Command({ resume }) comes back here.
      const verdict = interrupt({ question: "Publish this draft?" }) as string;
      return { messages: [new HumanMessage(`Reviewer said: ${verdict}`)] };
    })
    .addNode("publish", () => ({ messages: [new AIMessage("Published.")] }))
    .addEdge(START, "draft")
    .addEdge("draft", "review")
    .addEdge("review", "publish")
    .addEdge("publish", END);
}

async function main() {
  const config = { configurable: { thread_id: `demo-${Date.now()}` } };

  const first = await DrizzleSaver.fromUrl(`file:${file}`);
  await first.setup();
  const graph = buildGraph().compile({ checkpointer: first });
  await graph.invoke({ messages: [new HumanMessage("What is a checkpoint?")] }, config);
  const paused = await graph.getState(config);
  console.log(`Paused before ${paused.next.join(", ")}:`, paused.tasks[0]?.interrupts[0]?.value);
  await first.close();

  // A new saver on the same file, as after a restart, resumes where the run stopped.
  const second = await DrizzleSaver.fromUrl(`file:${file}`);
  const resumed = buildGraph().compile({ checkpointer: second });
  const final = await resumed.invoke(new Command({ resume: "yes" }), config);
  console.log("\nFinal messages:");
  for (const message of final.messages) console.log(`  ${message.getType().padEnd(5)} ${message.content}`);

  console.log(`\nHistory of ${config.configurable.thread_id} in ${file} (newest first):`);
  for await (const snapshot of resumed.getStateHistory(config)) {
    const { source, step } = snapshot.metadata ?? {};
    console.log(
      `  step ${String(step).padStart(2)}  ${String(source).padEnd(6)} next=[${snapshot.next.join(", ")}]  messages=${snapshot.values.messages?.length ?? 0}`,
    );
  }
  await second.close();
  await rememberAcrossThreads();
}

/** Long-term memory: a node writes to the store in one thread, another reads it in a second thread. */
async function rememberAcrossThreads() {
  const checkpointer = await DrizzleSaver.fromUrl(`file:${file}`);
  const store = await DrizzleStore.fromUrl(`file:${file}`);
  await store.setup();
  const user = `user-${Date.now()}`;
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("chat", async (state, config: LangGraphRunnableConfig) => {
      const said = String(state.messages.at(-1)?.content ?? "");
      const memories = ["users", user, "memories"];
      const colour = /my favourite colour is (\w+)/i.exec(said)?.[1];
      if (colour) {
        await config.store?.put(memories, "colour", { colour });
        return { messages: [new AIMessage(`I will remember ${colour}.`)] };
      }
      const [memory] = (await config.store?.search(memories, { filter: { colour: { $exists: true } } })) ?? [];
      return {
        messages: [new AIMessage(memory ? `Your favourite colour is ${memory.value.colour}.` : "I don't know yet.")],
      };
    })
    .addEdge(START, "chat")
    .addEdge("chat", END)
    .compile({ checkpointer, store });
  console.log("\nMemory across threads:");
  for (const [thread, text] of [
    ["a", "My favourite colour is teal"],
    ["b", "What is my favourite colour?"],
  ]) {
    const config = { configurable: { thread_id: `${user}-${thread}` } };
    const result = await graph.invoke({ messages: [new HumanMessage(text)] }, config);
    console.log(`  thread ${thread}: ${text} -> ${result.messages.at(-1)?.content}`);
  }
  await store.close();
  await checkpointer.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
