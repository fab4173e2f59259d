import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";
import { DrizzleSaver } from "../../src/index.js";
import { clearTables, type DialectName, freshSaver } from "./databases.js";

/** LangGraph's own conformance suite, unchanged, on one dialect (one file each, so they run in parallel). */
export function runConformance(dialect: DialectName): void {
  let url = "";
  const initializer = {
    checkpointerName: `DrizzleSaver (${dialect})`,
    beforeAllTimeout: 120_000,
    async beforeAll() {
      const fresh = await freshSaver(dialect);
      url = fresh.url;
      await fresh.saver.close();
    },
    createCheckpointer: () => DrizzleSaver.fromUrl(url),
    async destroyCheckpointer(saver: DrizzleSaver) {
      await saver.close();
      await clearTables(url);
    },
  };
  validate(initializer);
  deltaChannelHistoryTests(initializer);
}
