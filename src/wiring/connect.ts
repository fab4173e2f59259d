/**
 * Opens the connection of `DrizzleSaver.fromUrl`: the first installed driver for the URL's
 * scheme, set up for the saver (postgres.js options, MySQL READ COMMITTED, SQLite WAL).
 */
import { pathToFileURL } from "node:url";
import { type DatabaseFamily, databaseFamily, sqliteFile, urlScheme } from "../database-family.js";
import { readCommittedPools } from "../drivers/mysql2.js";
import { walCheckpointerOf } from "../drivers/wal-checkpointer.js";
import { DriverNotInstalledError, InvalidInputError } from "../errors.js";
import { createPrivateDatabaseFile } from "./private-file.js";
import type { SupportedDatabase } from "./registry.js";

export interface OwnedConnection {
  db: SupportedDatabase;
  close(): Promise<void>;
}

/** Drivers `fromUrl` can open; by default the first installed one that serves the URL's scheme. */
export type UrlDriver = "postgres" | "pg" | "mysql2" | "better-sqlite3" | "libsql";

/** postgres.js options of the connections `fromUrl` opens. */
export const POSTGRES_OPTIONS = {
  onnotice: () => {},
  // A connection dropped while postgres.js loads array types would otherwise surface
  // as an unhandled rejection.
  fetch_types: false,
  // The saver's statements are prepared and find their partition at run time. Left to
  // itself, PostgreSQL keeps re-planning them on every call (a custom plan over 8
  // partitions looks cheaper than the generic one): about 1.5 ms each time.
  connection: { plan_cache_mode: "force_generic_plan" },
  // postgres.js waits before reconnecting after a dropped connection, tripling the
  // wait with each drop in a row up to 20 s: after a burst of drops (a restart, a
  // failover, sessions terminated by an administrator) calls stalled for up to 20 s
  // with the server long back. Seconds, doubling from 50 ms, at most 1 s, jittered.
  backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1) * (0.5 + Math.random() / 2),
};

/** The drivers of each family, by preference. */
const FAMILY_DRIVERS: Record<DatabaseFamily, UrlDriver[]> = {
  postgres: ["postgres", "pg"],
  mysql: ["mysql2"],
  sqlite: ["better-sqlite3", "libsql"],
};

/** The npm package of each driver. */
const PACKAGES: Record<UrlDriver, string> = {
  postgres: "postgres",
  pg: "pg",
  mysql2: "mysql2",
  "better-sqlite3": "better-sqlite3",
  libsql: "@libsql/client",
};

/**
 * Opens a connection for `DrizzleSaver.fromUrl`. Drivers are optional peer
 * dependencies, so each is imported only when its scheme is used.
 */
export async function connect(url: string, driver?: UrlDriver): Promise<OwnedConnection> {
  if (typeof url !== "string" || url.length === 0) throw new InvalidInputError("a database URL is required");
  const candidates = FAMILY_DRIVERS[databaseFamily(url)];
  // The messages below name the URL's scheme; a plain path counts as file:.
  const scheme = urlScheme(url) ?? "file";
  if (driver !== undefined && !candidates.includes(driver)) {
    throw new InvalidInputError(
      `the driver "${driver}" does not serve ${scheme}: URLs; use one of ${candidates.join(", ")}`,
    );
  }
  // libSQL only when asked for: better-sqlite3 stays the default for files.
  const tried = driver ? [driver] : candidates.filter((name) => name !== "libsql");
  for (const name of tried) {
    const connection = await open(name, url);
    if (connection) return connection;
  }
  const packages = tried.map((name) => PACKAGES[name]);
  throw new DriverNotInstalledError(
    `no driver for ${scheme}: URLs is installed: npm install ${packages[0]}${packages.length > 1 ? ` (or ${packages.slice(1).join(", ")})` : ""}`,
    packages,
  );
}

/**
 * Runs a driver's constructor on a server URL. A URL the driver cannot read fails there
 * with Node's `TypeError: Invalid URL`, which carries the whole URL, password included,
 * as its `input` (loggers print it), or with a bare `URIError` (a "%" that starts no
 * escape). Either becomes an InvalidInputError naming the scheme only, with no cause.
 * The drivers' own parsing decides, not ours: they accept URLs that the URL standard
 * does not (postgres.js several hosts, node-postgres a socket directory).
 */
export function parsedByDriver<T>(url: string, open: () => T): T {
  try {
    return open();
  } catch (error) {
    const scheme = urlScheme(url) ?? "database";
    if ((error as { code?: unknown } | null)?.code === "ERR_INVALID_URL") {
      throw new InvalidInputError(
        `the ${scheme}:// URL cannot be parsed: check its host and port, and percent-encode the characters of its user name and password that a URL reserves ("#", "/", "?", "@", ":", "%", spaces)`,
      );
    }
    if (error instanceof URIError) {
      throw new InvalidInputError(`the ${scheme}:// URL holds a "%" that starts no percent-escape: write "%" as %25`);
    }
    throw error;
  }
}

/** Imports an optional package; undefined when it is not installed. */
async function optional<T>(load: () => Promise<T>, name: string): Promise<T | undefined> {
  try {
    return await load();
  } catch (error) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (code === "ERR_MODULE_NOT_FOUND" && String(message).includes(`'${name}'`)) return undefined;
    throw error;
  }
}

async function open(driver: UrlDriver, url: string): Promise<OwnedConnection | undefined> {
  switch (driver) {
    case "postgres":
      return openPostgresJs(url);
    case "pg":
      return openNodePostgres(url);
    case "mysql2":
      return openMysql2(url);
    case "better-sqlite3":
      return openBetterSqlite(url);
    case "libsql":
      return openLibsql(url);
  }
}

async function openPostgresJs(url: string): Promise<OwnedConnection | undefined> {
  const postgres = (await optional(() => import("postgres"), "postgres"))?.default;
  if (!postgres) return undefined;
  const { drizzle } = await import("drizzle-orm/postgres-js");
  const client = parsedByDriver(url, () => postgres(url, POSTGRES_OPTIONS));
  // A timeout on end: after a dropped connection postgres.js may otherwise wait forever for it.
  return { db: drizzle(client), close: () => client.end({ timeout: 5 }) };
}

async function openNodePostgres(url: string): Promise<OwnedConnection | undefined> {
  const pg = (await optional(() => import("pg"), "pg"))?.default;
  if (!pg) return undefined;
  const { drizzle } = await import("drizzle-orm/node-postgres");
  // Generic plans, as for postgres.js (see POSTGRES_OPTIONS).
  const pool = parsedByDriver(
    url,
    () => new pg.Pool({ connectionString: url, options: "-c plan_cache_mode=force_generic_plan" }),
  );
  // An idle client that loses its connection emits "error"; unhandled, it would end the process.
  pool.on("error", () => {});
  return { db: drizzle(pool), close: () => endPool(pool) };
}

/**
 * Ends a node-postgres pool once no call waits for one of its clients. pg-pool never
 * answers the requests still queued for a client when `end()` is called: the saver's
 * calls waiting there would hang forever. They run first, as postgres.js's `end` lets
 * its queued queries run.
 */
async function endPool(pool: { readonly waitingCount: number; end(): Promise<void> }): Promise<void> {
  while (pool.waitingCount > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  await pool.end();
}

/** The callback API of a mysql2 connection, as its pool's "connection" event gives it. */
interface CallbackConnection {
  query(sql: string, callback: (error: unknown) => void): unknown;
}

async function openMysql2(url: string): Promise<OwnedConnection | undefined> {
  const mysql = await optional(() => import("mysql2/promise"), "mysql2");
  if (!mysql) return undefined;
  const { drizzle } = await import("drizzle-orm/mysql2");
  // mysql2 reads host, user and database from any scheme; mariadb:// is the same server protocol.
  const pool = parsedByDriver(url, () =>
    mysql.createPool({
      uri: url.replace(/^mariadb:/i, "mysql:"),
      charset: "utf8mb4",
      supportBigNumbers: true,
    }),
  );
  // Queued on each new connection before anything else runs on it (see readCommittedPools).
  // The event hands over mysql2's callback connection (its promise wrapper comes later).
  pool.on("connection", (connection) => {
    (connection as unknown as CallbackConnection).query(
      "set session transaction isolation level read committed",
      () => {},
    );
  });
  readCommittedPools.add(pool);
  return { db: drizzle(pool), close: () => pool.end() };
}

export const SQLITE_BUSY_TIMEOUT_MS = 10_000;

/**
 * Switches an SQLite file to WAL. On a file not yet in WAL the switch reads the header,
 * then upgrades that read lock to a write lock, and SQLite never calls the busy handler
 * on an upgrade: a process that opens the file while another one switches or writes it
 * gets SQLITE_BUSY at once. So the switch is retried here, within the busy timeout.
 */
async function switchToWal(pragma: () => unknown): Promise<void> {
  const deadline = Date.now() + SQLITE_BUSY_TIMEOUT_MS;
  for (let pause = 2; ; pause = Math.min(pause * 2, 100)) {
    try {
      await pragma();
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "SQLITE_BUSY" || Date.now() >= deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

async function openBetterSqlite(url: string): Promise<OwnedConnection | undefined> {
  const path = sqliteFile(url) as string;
  const Database = (await optional(() => import("better-sqlite3"), "better-sqlite3"))?.default;
  if (!Database) return undefined;
  const { drizzle } = await import("drizzle-orm/better-sqlite3");
  createPrivateDatabaseFile(path);
  const sqlite = new Database(path);
  // WAL lets readers work while a writer commits; the busy timeout makes writers
  // from other processes wait for the lock instead of failing with SQLITE_BUSY.
  sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  try {
    if (path !== ":memory:") await switchToWal(() => sqlite.pragma("journal_mode = WAL"));
  } catch (error) {
    sqlite.close();
    throw error;
  }
  sqlite.pragma("synchronous = NORMAL");
  return {
    db: drizzle(sqlite),
    close: async () => {
      walCheckpointerOf(sqlite)?.stop();
      sqlite.close();
    },
  };
}

async function openLibsql(url: string): Promise<OwnedConnection | undefined> {
  const path = sqliteFile(url) as string;
  const libsql = await optional(() => import("@libsql/client"), "@libsql/client");
  if (!libsql) return undefined;
  const { drizzle } = await import("drizzle-orm/libsql");
  createPrivateDatabaseFile(path);
  // The busy timeout, as for better-sqlite3: other connections and processes wait for the lock.
  const client = libsql.createClient({
    url: path === ":memory:" ? ":memory:" : pathToFileURL(path).href,
    timeout: SQLITE_BUSY_TIMEOUT_MS,
  });
  try {
    if (path !== ":memory:") await switchToWal(() => client.execute("pragma journal_mode = wal"));
  } catch (error) {
    client.close();
    throw error;
  }
  return {
    db: drizzle(client),
    close: async () => {
      client.close();
    },
  };
}
