import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";
import { DrizzleSaver, type EncryptionOptions } from "../../src/index.js";
import { clearTables, type DialectName, freshSaver } from "./databases.js";
import { clearSaver, type ExtraDriver, freshDriverSaver, type OpenDatabase } from "./drivers.js";

/**
 * LangGraph's own conformance suite, unchanged, on one dialect through `fromUrl`'s
 * default driver (one file each, so they run in parallel); with `encryption`, every
 * value sealed (test/encryption/conformance-*.test.ts).
 */
export function runConformance(dialect: DialectName, encryption?: EncryptionOptions): void {
  let url = "";
  const options = encryption ? { encryption } : {};
  const initializer = {
    checkpointerName: `DrizzleSaver (${dialect}${encryption ? `, encrypted${encryption.cacheBytes === 0 ? ", no memory" : ""}` : ""})`,
    beforeAllTimeout: 120_000,
    async beforeAll() {
      const fresh = await freshSaver(dialect);
      url = fresh.url;
      await fresh.saver.close();
    },
    createCheckpointer: () => DrizzleSaver.fromUrl(url, options),
    async destroyCheckpointer(saver: DrizzleSaver) {
      await saver.close();
      await clearTables(url, options);
    },
  };
  validate(initializer);
  deltaChannelHistoryTests(initializer);
}

/**
 * The same suite on a drizzle database the application made with `driver`: one database
 * per file; with `encryption`, every value sealed.
 */
export function runDriverConformance(driver: ExtraDriver, encryption?: EncryptionOptions): void {
  let database: OpenDatabase | undefined;
  const initializer = {
    checkpointerName: `DrizzleSaver (${driver}${encryption ? ", encrypted" : ""})`,
    beforeAllTimeout: 120_000,
    async beforeAll() {
      database = (await freshDriverSaver(driver)).database;
    },
    async afterAll() {
      await database?.close();
    },
    createCheckpointer: () => {
      if (!database) throw new Error("database not open");
      return new DrizzleSaver(database.db, encryption ? { encryption } : {});
    },
    destroyCheckpointer: (saver: DrizzleSaver) => clearSaver(saver),
  };
  validate(initializer);
  deltaChannelHistoryTests(initializer);
}
