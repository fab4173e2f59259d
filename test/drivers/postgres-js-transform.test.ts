/**
 * A postgres.js client made with `transform` options that rewrite what a query returns
 * (column names, JSON values, rows): the saver's reads would come back renamed (a
 * tuple's config without its thread id, pending writes without their task id, metadata
 * keys camel-cased), so such a client is refused before anything runs. Transforms of what
 * is sent only (`undefined`, `column.to`) change nothing the saver does.
 */
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore, UnsupportedDriverError } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { checkpointOf } from "../reliability/helpers.js";

/** Nothing listens there: a client that sent anything would fail, not hang. */
const NOWHERE = "postgres://u:p@127.0.0.1:1/none";

const clients: postgres.Sql[] = [];
afterAll(async () => {
  for (const client of clients) await client.end({ timeout: 1 });
});
const clientWith = (url: string, options: postgres.Options<Record<string, postgres.PostgresType>>) => {
  const client = postgres(url, { onnotice: () => {}, ...options });
  clients.push(client);
  return client;
};

describe("a postgres.js client with transforms", () => {
  it.each([
    ["postgres.camel", { transform: postgres.camel }],
    ["postgres.toCamel", { transform: postgres.toCamel }],
    ["postgres.kebab", { transform: postgres.kebab }],
    ["a column function", { transform: { column: (name: string) => name.toUpperCase() } }],
    ["a value function", { transform: { value: (value: unknown) => value } }],
    ["a row function", { transform: { row: (row: postgres.Row) => row } }],
  ])("with %s is refused by the saver and the store, naming the option", (_, options) => {
    const db = drizzle(clientWith(NOWHERE, options));
    for (const make of [() => new DrizzleSaver(db), () => new DrizzleStore(db)]) {
      expect(make).toThrow(UnsupportedDriverError);
      expect(make).toThrow(/transform/);
    }
  });

  it("with transforms of what is sent only works as without", async () => {
    const url = await freshDatabaseUrl("postgres");
    const db = drizzle(clientWith(url, { transform: { undefined: null, column: { to: postgres.fromCamel } } }));
    const saver = new DrizzleSaver(db);
    await saver.setup();
    const config = await saver.put(
      { configurable: { thread_id: "t", checkpoint_ns: "" } },
      checkpointOf(uuid6(1), { n: 1 }, { n: 1 }),
      { source: "loop", step: 0, parents: {}, run_id: "r" } as never,
      { n: 1 },
    );
    await saver.putWrites(config, [["n", 2]], "task_one");
    const tuple = await saver.getTuple({ configurable: { thread_id: "t" } });
    expect(tuple?.config.configurable?.thread_id).toBe("t");
    expect(tuple?.metadata).toMatchObject({ run_id: "r" });
    expect(tuple?.pendingWrites).toEqual([["task_one", "n", 2]]);
  });
});
