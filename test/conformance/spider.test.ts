import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";
import { DrizzleSaver } from "../../src/index.js";
import { clearTables } from "../helpers/databases.js";
import { freshSpider } from "../spider/support.js";

// LangGraph's conformance suite, unchanged, through a Spider head over two data nodes.
let url = "";
let shards: string[] = [];
const initializer = {
  checkpointerName: "DrizzleSaver (MariaDB Spider)",
  beforeAllTimeout: 120_000,
  async beforeAll() {
    const fresh = await freshSpider();
    ({ url, shards } = fresh);
    await fresh.saver.close();
  },
  createCheckpointer: () => DrizzleSaver.fromUrl(url, { spider: { shards } }),
  async destroyCheckpointer(saver: DrizzleSaver) {
    await saver.close();
    await clearTables(url);
  },
};
validate(initializer);
deltaChannelHistoryTests(initializer);
