import { InvalidInputError } from "../errors.js";
import type { SupportedDatabase } from "./registry.js";

export interface OwnedConnection {
  db: SupportedDatabase;
  close(): Promise<void>;
}

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
};

const SQLITE_BUSY_TIMEOUT_MS = 10_000;

/**
 * Switches an SQLite file to WAL. On a file not yet in WAL the switch reads the header,
 * then upgrades that read lock to a write lock, and SQLite never calls the busy handler
 * on an upgrade: a process that opens the file while another one switches or writes it
 * gets SQLITE_BUSY at once. So the switch is retried here, within the busy timeout.
 */
async function switchToWal(sqlite: { pragma(source: string): unknown }): Promise<void> {
  const deadline = Date.now() + SQLITE_BUSY_TIMEOUT_MS;
  for (let pause = 2; ; pause = Math.min(pause * 2, 100)) {
    try {
      sqlite.pragma("journal_mode = WAL");
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "SQLITE_BUSY" || Date.now() >= deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * Opens a connection for `DrizzleSaver.fromUrl`. Drivers are optional peer
 * dependencies, so each is imported only when its scheme is used.
 */
export async function connect(url: string): Promise<OwnedConnection> {
  if (typeof url !== "string" || url.length === 0) throw new InvalidInputError("a database URL is required");
  // A scheme is "name:" (two letters at least, so a Windows drive is a path).
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(url)?.[1]?.toLowerCase();

  if (scheme === "postgres" || scheme === "postgresql") {
    const { default: postgres } = await import("postgres");
    const { drizzle } = await import("drizzle-orm/postgres-js");
    // A timeout on end: after a dropped connection postgres.js may otherwise wait forever for it.
    const client = postgres(url, POSTGRES_OPTIONS);
    return { db: drizzle(client), close: () => client.end({ timeout: 5 }) };
  }
  if (scheme === "mysql") {
    const mysql = await import("mysql2/promise");
    const { drizzle } = await import("drizzle-orm/mysql2");
    const pool = mysql.createPool({ uri: url, charset: "utf8mb4", supportBigNumbers: true });
    return { db: drizzle(pool), close: () => pool.end() };
  }
  if (scheme !== undefined && scheme !== "file") {
    throw new InvalidInputError(
      `unsupported database URL scheme "${scheme}://": use postgres://, postgresql://, mysql://, file:<path>, :memory: or a file path`,
    );
  }
  const path = scheme === "file" ? url.replace(/^file:(\/\/)?/i, "") : url;
  if (path.length === 0) throw new InvalidInputError("the SQLite URL names no file");
  const { default: Database } = await import("better-sqlite3");
  const { drizzle } = await import("drizzle-orm/better-sqlite3");
  const sqlite = new Database(path);
  // WAL lets readers work while a writer commits; the busy timeout makes writers
  // from other processes wait for the lock instead of failing with SQLITE_BUSY.
  sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  try {
    if (path !== ":memory:") await switchToWal(sqlite);
  } catch (error) {
    sqlite.close();
    throw error;
  }
  sqlite.pragma("synchronous = NORMAL");
  return {
    db: drizzle(sqlite),
    close: async () => {
      sqlite.close();
    },
  };
}
