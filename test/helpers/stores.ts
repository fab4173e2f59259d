/**
 * Stores for the store tests: a fresh database on every target (the three dialects by
 * URL, and every extra driver of drivers.ts), with the migrations applied.
 */
import { DrizzleStore, type DrizzleStoreOptions } from "../../src/index.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "./databases.js";
import { DIALECT_OF, EXTRA_DRIVERS, openFresh, TARGETS, type Target } from "./drivers.js";

export { DIALECTS, TARGETS };

export interface OpenStore {
  store: DrizzleStore;
  dialect: DialectName;
  /** The URL of a dialect target (for raw SQL); undefined for an extra driver. */
  url?: string;
  close(): Promise<void>;
}

export async function freshStore(target: Target, options: DrizzleStoreOptions = {}): Promise<OpenStore> {
  if ((EXTRA_DRIVERS as readonly string[]).includes(target)) {
    const driver = target as (typeof EXTRA_DRIVERS)[number];
    const database = await openFresh(driver);
    const store = new DrizzleStore(database.db, options);
    await store.setup();
    return {
      store,
      dialect: DIALECT_OF[driver],
      close: async () => {
        await store.close();
        await database.close();
      },
    };
  }
  const dialect = target as DialectName;
  const url = await freshDatabaseUrl(dialect);
  const store = await DrizzleStore.fromUrl(url, options);
  await store.setup();
  return { store, dialect, url, close: () => store.close() };
}

/** A clock a test moves by hand: `tick` advances it by one millisecond (or `ms`). */
export function manualClock(start = Date.UTC(2026, 0, 1)) {
  let now = start;
  return {
    now: () => now,
    tick: (ms = 1) => {
      now += ms;
      return now;
    },
  };
}
