/**
 * `setup()` on a MariaDB Spider head (the saver's `spider` option): migrates every data
 * node, then builds the head's Spider tables from the first node's.
 */
import { sql } from "drizzle-orm";
import type { Dialect, MigrationOptions } from "../dialects/dialect.js";
import { InvalidInputError, type MigrationInfo } from "../errors.js";
import { optionKeys, requireKnownNestedOptions } from "../known-options.js";
import { journal } from "../savers/migrations/folder.js";
import { appliedMigrations, type MigrationStatus, Migrations, splitByApplied } from "../savers/migrations/migrate.js";
import { connect } from "../wiring/connect.js";
import { resolve } from "../wiring/registry.js";
import { createServerSql, headTableSql, type ShardServer, serverName, shardServer } from "./ddl.js";

/** The saver's option for a MariaDB Spider head (see docs/sharding.md). */
export interface SpiderOptions {
  /**
   * The data nodes, as `mysql://user:password@host:port/database` (or `mariadb://`), in a fixed order:
   * a thread's shard is KEY(thread_id) over this list, so changing it moves threads.
   */
  shards: string[];
}

const SPIDER_OPTION_KEYS = optionKeys<SpiderOptions>({ shards: true });

/** The `spider` option checked, its keys and its data nodes' URLs: before `fromUrl` connects. */
export function checkSpiderOptions(spider: SpiderOptions): void {
  requireKnownNestedOptions(spider, "spider", SPIDER_OPTION_KEYS);
  const shards = spider.shards;
  if (!Array.isArray(shards) || shards.length === 0 || shards.some((url) => typeof url !== "string")) {
    throw new InvalidInputError("spider.shards must list the data nodes' mysql:// URLs");
  }
  for (const [i, url] of shards.entries()) shardServer(url, `s${i}`); // validates early
}

const TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_threads", "checkpoint_metadata"];

/**
 * `setup()` on a Spider head: every data node gets the ordinary MySQL migrations (its
 * own history, generated columns, indexes); then the head's Spider tables are made from
 * the first node's tables. The head holds no rows, so when the nodes' migrations
 * change, its tables are simply recreated; its history records which ones it mirrors.
 */
export class SpiderMigrations {
  private readonly shards: string[];

  constructor(
    private readonly head: Dialect,
    private readonly options: MigrationOptions,
    spider: SpiderOptions,
  ) {
    if (head.name !== "mysql") throw new InvalidInputError("the spider option needs a MariaDB (mysql2) database");
    checkSpiderOptions(spider);
    this.shards = spider.shards;
  }

  async apply(): Promise<MigrationInfo[]> {
    await this.checkHead();
    let nodeTables: string[] = [];
    for (const [i, url] of this.shards.entries()) {
      const created = await withShard(url, async (dialect) => {
        await new Migrations(dialect, this.settings()).apply();
        return i === 0 ? showCreateTables(dialect) : [];
      });
      if (i === 0) nodeTables = created;
    }
    const all = journal(this.options.migrationsFolder);
    const table = await this.head.migrationsTable(this.options);
    let rebuilt = false;
    await this.head.executor.transaction(async (tx) => {
      const unlock = await this.head.lockMigrations(tx, this.options);
      try {
        await tx.script(this.head.createMigrationsTable(table));
        const recorded = new Set((await tx.all(sql`select created_at from ${table}`)).map((r) => Number(r.created_at)));
        const servers = await this.servers(tx.all.bind(tx));
        for (const server of servers) await tx.script(sql.raw(createServerSql(server)));
        if (all.every((m) => recorded.has(m.createdAt)) && recorded.size === all.length) return;
        for (const [i, name] of TABLES.entries()) {
          await tx.script(sql.raw(`drop table if exists \`${name}\``));
          await tx.script(sql.raw(headTableSql(nodeTables[i], name, servers)));
        }
        await tx.run(sql`delete from ${table}`);
        for (const m of all)
          await tx.run(sql`insert into ${table} (hash, created_at) values (${m.tag}, ${m.createdAt})`);
        rebuilt = true;
      } finally {
        await unlock();
      }
    });
    return rebuilt ? all : [];
  }

  /**
   * Spider's group-by handler rewrites the saver's window functions (row_number() over
   * (order by ...)) into SQL the data nodes reject ("Unknown column ... in ORDER BY").
   */
  private async checkHead(): Promise<void> {
    let rows: Record<string, unknown>[];
    try {
      rows = await this.head.query(sql`select @@global.spider_disable_group_by_handler as disabled`);
    } catch (error) {
      throw new InvalidInputError(
        "the spider option needs a MariaDB server with the Spider engine (INSTALL SONAME 'ha_spider')",
        {
          cause: error,
        },
      );
    }
    if (Number(rows[0]?.disabled) !== 1) {
      throw new InvalidInputError(
        "the Spider head needs spider_disable_group_by_handler=ON (in its server options, or SET GLOBAL): Spider's group-by handler mistranslates window functions",
      );
    }
  }

  async status(): Promise<MigrationStatus> {
    return splitByApplied(this.options.migrationsFolder, await appliedMigrations(this.head, this.options));
  }

  private settings() {
    return { folder: this.options.migrationsFolder, ownTables: false, table: this.options.migrationsTable };
  }

  private async servers(all: (statement: ReturnType<typeof sql>) => Promise<Record<string, unknown>[]>) {
    const [row] = await all(sql`select database() as db`);
    const database = String(row?.db ?? "");
    return this.shards.map((url, i): ShardServer => shardServer(url, serverName(database, i)));
  }
}

async function withShard<T>(url: string, work: (dialect: Dialect) => Promise<T>): Promise<T> {
  const connection = await connect(url);
  try {
    const { dialect, migrations } = resolve(connection.db, undefined);
    if (migrations !== "mysql") throw new InvalidInputError(`spider.shards: "${url}" is not a MariaDB URL`);
    return await work(dialect);
  } finally {
    await connection.close();
  }
}

async function showCreateTables(dialect: Dialect): Promise<string[]> {
  const created: string[] = [];
  for (const name of TABLES) {
    const [row] = await dialect.query(sql.raw(`show create table \`${name}\``));
    created.push(String(row?.["Create Table"]));
  }
  return created;
}
