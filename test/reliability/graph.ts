import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, type BaseCheckpointSaver, END, START, StateGraph } from "@langchain/langgraph";
import { payload } from "./helpers.js";

/**
 * The graph the recovery scenarios run: one node that runs `steps` times, each
 * superstep appending its index to `log` (so the final state shows whether any step
 * was lost or applied twice) and replacing a large `scratch` value (so every
 * checkpoint writes a sizeable blob). `onStep` runs inside the node, before it returns.
 */
const StepsState = Annotation.Root({
  log: Annotation<number[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  scratch: Annotation<string>,
});

export function buildStepsGraph(
  checkpointer: BaseCheckpointSaver,
  steps: number,
  onStep: (index: number) => Promise<void> | void,
  scratchSize = 32 * 1024,
) {
  return new StateGraph(StepsState)
    .addNode("step", async (state) => {
      const index = state.log.length + 1;
      await onStep(index);
      return { log: [index], scratch: payload(`step ${index}`, scratchSize) };
    })
    .addEdge(START, "step")
    .addConditionalEdges("step", (state) => (state.log.length < steps ? "step" : END), ["step", END])
    .compile({ checkpointer });
}

export function graphConfig(threadId: string, steps: number, durability?: "sync" | "async"): RunnableConfig {
  return {
    configurable: { thread_id: threadId },
    recursionLimit: steps + 10,
    ...(durability ? { durability } : {}),
  };
}

export const fullLog = (steps: number) => Array.from({ length: steps }, (_, i) => i + 1);
