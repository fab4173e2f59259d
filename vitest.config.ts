import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // @langchain/langgraph-checkpoint-validation calls describe/it/expect as globals.
    globals: true,
    include: ["test/**/*.test.ts"],
    // One temporary directory per run, removed at its end: a run leaves nothing behind.
    globalSetup: ["test/helpers/temporary-directory.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: more workers only contend for the database servers.
    maxWorkers: 3,
  },
});
