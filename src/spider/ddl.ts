/**
 * The DDL of a MariaDB Spider head: a `CREATE SERVER` for each data node, and head tables
 * derived from a node's `SHOW CREATE TABLE`.
 */
import { createHash } from "node:crypto";
import { databaseFamily } from "../database-family.js";
import { InvalidInputError } from "../errors.js";

/** A data node as the head's `CREATE SERVER` needs it. */
export interface ShardServer {
  /** Server name on the head (mysql.servers). */
  name: string;
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

/**
 * The head's server names for its shards: `lg_<head database>_s<i>`, or a hash of the
 * database name when that would pass MariaDB's 64 characters. Server names are global
 * to the head, so two databases on one head never share one.
 */
export function serverName(headDatabase: string, index: number): string {
  const readable = `lg_${headDatabase}_s${index}`;
  if (readable.length <= 64 && /^[A-Za-z0-9_]+$/.test(headDatabase)) return readable;
  return `lg_${createHash("sha256").update(headDatabase).digest("hex").slice(0, 16)}_s${index}`;
}

/** Whether fromUrl opens the URL as MySQL/MariaDB (mysql://, mariadb://); another scheme is no shard. */
function isMysqlUrl(url: string): boolean {
  try {
    return databaseFamily(url) === "mysql";
  } catch {
    return false; // an unsupported scheme: shardServer's message says what a shard URL looks like
  }
}

/** A shard from its URL, `mysql://user:password@host:port/database` (or `mariadb://`). */
export function shardServer(url: string, name: string): ShardServer {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError(`spider.shards: "${url}" is not a URL`);
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ""));
  if (!isMysqlUrl(url) || database.length === 0) {
    throw new InvalidInputError(
      `spider.shards: "${parsed.protocol}//${parsed.host}" needs the form mysql://user:password@host:port/database (or mariadb://)`,
    );
  }
  return {
    name,
    host: parsed.hostname,
    port: parsed.port ? Number(parsed.port) : 3306,
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    database,
  };
}

/** A MariaDB string literal (DDL takes no parameters). */
function literal(text: string): string {
  return `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** `CREATE OR REPLACE SERVER` for one shard: the head's link to it. */
export function createServerSql(server: ShardServer): string {
  return (
    `create or replace server \`${server.name}\` foreign data wrapper mysql options (` +
    `host ${literal(server.host)}, port ${server.port}, user ${literal(server.user)}, ` +
    `password ${literal(server.password)}, database ${literal(server.database)})`
  );
}

/**
 * The head table for a data node table, from the node's `SHOW CREATE TABLE`. Same
 * columns and indexes (the head's optimizer plans with them), but:
 * - generated columns become plain nullable ones: a Spider head refuses to write a
 *   generated column (error 1906), while the saver never writes them and the node
 *   computes them. Filters on them are pushed down to each node, where they are indexed;
 * - ENGINE=SPIDER, partitioned by KEY (thread_id), one partition per shard;
 * - `direct_dup_insert`: INSERT ... ON DUPLICATE KEY UPDATE goes to the node as it is,
 *   instead of Spider's read-then-update that would write the generated columns.
 */
export function headTableSql(nodeCreateTable: string, table: string, servers: ShardServer[]): string {
  const end = nodeCreateTable.lastIndexOf("\n)");
  if (!nodeCreateTable.startsWith("CREATE TABLE") || end < 0) {
    throw new Error(`unexpected SHOW CREATE TABLE output for ${table}`);
  }
  const body = nodeCreateTable
    .slice(0, end)
    .split("\n")
    .map((line) => line.replace(/ GENERATED ALWAYS AS \(.*\) (VIRTUAL|STORED|PERSISTENT)/, " DEFAULT NULL"))
    .join("\n");
  const options = nodeCreateTable.slice(end + 2);
  const charset = /DEFAULT CHARSET=(\w+)/.exec(options)?.[1];
  const collate = /COLLATE=(\w+)/.exec(options)?.[1];
  const partitions = servers.map((server, i) => `PARTITION p${i} COMMENT = 'srv "${server.name}"'`);
  return (
    `${body}\n) ENGINE=SPIDER${charset ? ` DEFAULT CHARSET=${charset}` : ""}${collate ? ` COLLATE=${collate}` : ""}` +
    ` COMMENT='wrapper "mysql", table "${table}", direct_dup_insert "1"'` +
    `\nPARTITION BY KEY (\`thread_id\`) (${partitions.join(", ")})`
  );
}
