import { DrizzleSaver, InvalidInputError } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { freshSpider, rowsPerShard } from "./support.js";

// setup() with the spider option: the layout it builds, idempotence, and its refusals.
it("builds Spider tables on the head over the nodes' tables, with generated columns only on the nodes", async () => {
  const { url, shards, saver } = await freshSpider();
  try {
    expect(await saver.setup()).toEqual([]);
    expect((await saver.migrationStatus()).pending).toEqual([]);
    const columns = (rows: Record<string, unknown>[]) =>
      rows.map((row) => `${row.TABLE_NAME}.${row.COLUMN_NAME}:${row.EXTRA}`).sort();
    const query = `select table_name as TABLE_NAME, column_name as COLUMN_NAME, extra as EXTRA
      from information_schema.columns where table_schema = database() and column_name like 'meta\\_%'`;
    const [head] = await rowsPerShard([url], query);
    expect(columns(head)).toEqual([
      "checkpoint_threads.meta_user_id:",
      "checkpoints.meta_run_id:",
      "checkpoints.meta_source:",
      "checkpoints.meta_step:",
    ]);
    for (const node of await rowsPerShard(shards, query)) {
      // The thread table's user_id is stored (0006_stored_thread_user_id); the checkpoints' are virtual.
      expect(columns(node)).toEqual([
        "checkpoint_threads.meta_user_id:STORED GENERATED",
        "checkpoints.meta_run_id:VIRTUAL GENERATED",
        "checkpoints.meta_source:VIRTUAL GENERATED",
        "checkpoints.meta_step:VIRTUAL GENERATED",
      ]);
    }
    const [engines] = await rowsPerShard(
      [url],
      "select table_name as t, engine as e from information_schema.tables where table_schema = database() and table_name like 'checkpoint%'",
    );
    expect(engines.map((row) => `${row.t}:${row.e}`).sort()).toEqual([
      "checkpoint_blobs:SPIDER",
      "checkpoint_metadata:SPIDER",
      "checkpoint_threads:SPIDER",
      "checkpoint_writes:SPIDER",
      "checkpoints:SPIDER",
    ]);
    // The metadata index's triggers live on the data nodes, where the rows are written.
    const triggers = "select trigger_name as t from information_schema.triggers where trigger_schema = database()";
    expect(await rowsPerShard([url], triggers)).toEqual([[]]);
    for (const node of await rowsPerShard(shards, triggers)) expect(node).toHaveLength(3);
  } finally {
    await saver.close();
  }
});

it("takes mariadb:// URLs for the head and the data nodes, as it takes mysql:// ones", async () => {
  const { url, shards, saver } = await freshSpider();
  await saver.close();
  const mariadb = (mysqlUrl: string) => mysqlUrl.replace(/^mysql:/, "mariadb:");
  const again = await DrizzleSaver.fromUrl(mariadb(url), { spider: { shards: shards.map(mariadb) } });
  try {
    // The same head and nodes: setup finds everything in place.
    expect(await again.setup()).toEqual([]);
    expect((await again.migrationStatus()).pending).toEqual([]);
  } finally {
    await again.close();
  }
});

it("refuses a bad list of data nodes, and a server without Spider, with nothing created", async () => {
  const url = await freshDatabaseUrl("mysql");
  for (const shards of [[], ["postgres://x@127.0.0.1/db"], ["mysql://x@127.0.0.1"]]) {
    const saver = await DrizzleSaver.fromUrl(url, { spider: { shards } }).catch((error: unknown) => error);
    expect(saver).toBeInstanceOf(InvalidInputError);
  }
  // The plain MariaDB server of MYSQL_URL has no Spider engine.
  const saver = await DrizzleSaver.fromUrl(url, { spider: { shards: [url] } });
  try {
    await expect(saver.setup()).rejects.toThrow(/Spider engine/);
    const [tables] = await rowsPerShard(
      [url],
      "select table_name from information_schema.tables where table_schema = database()",
    );
    expect(tables).toEqual([]);
  } finally {
    await saver.close();
  }
});
