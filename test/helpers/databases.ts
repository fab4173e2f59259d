import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { DrizzleSaver, type FromUrlOptions } from "../../src/index.js";

/**
 * The three databases every behaviour is tested on. PostgreSQL and MariaDB come
 * from PG_URL and MYSQL_URL, which scripts/with-databases.sh sets after starting
 * private servers; a missing URL fails the tests rather than skipping them.
 */
export const DIALECTS = ["sqlite", "postgres", "mysql"] as const;
export type DialectName = (typeof DIALECTS)[number];

function serverUrl(name: "PG_URL" | "MYSQL_URL"): string {
  const url = process.env[name];
  if (!url) throw new Error(`${name} is not set: run the tests through "npm test" (scripts/with-databases.sh)`);
  return url;
}

/** A URL to an empty database of its own, so test files never see each other's rows. */
export async function freshDatabaseUrl(dialect: DialectName): Promise<string> {
  const name = `t_${randomBytes(6).toString("hex")}`;
  if (dialect === "sqlite") return join(mkdtempSync(join(tmpdir(), "lgcd-")), `${name}.db`);
  if (dialect === "postgres") {
    const admin = postgres(serverUrl("PG_URL"), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    const url = new URL(serverUrl("PG_URL"));
    url.pathname = `/${name}`;
    return url.toString();
  }
  const admin = await mysql.createConnection(serverUrl("MYSQL_URL"));
  await admin.query(`create database ${name} character set utf8mb4`);
  await admin.end();
  const url = new URL(serverUrl("MYSQL_URL"));
  url.pathname = `/${name}`;
  return url.toString();
}

/** A saver over a fresh database with the migrations applied. */
export async function freshSaver(dialect: DialectName, options: FromUrlOptions = {}) {
  const url = await freshDatabaseUrl(dialect);
  const saver = await DrizzleSaver.fromUrl(url, options);
  await saver.setup();
  return { saver, url };
}

/** Empties the saver's tables between tests that share one database. */
export async function clearTables(url: string, options: FromUrlOptions = {}): Promise<void> {
  const saver = await DrizzleSaver.fromUrl(url, options);
  try {
    for await (const tuple of saver.list({})) {
      await saver.deleteThread(tuple.config.configurable?.thread_id as string);
    }
  } finally {
    await saver.close();
  }
}

/**
 * mysql2 option for tests that read our MySQL tables directly: ids are VARBINARY,
 * namespaces and write channels BLOB (exact comparison), and would come back as
 * Buffers; this returns them as text.
 */
export const mysqlIdsAsText = {
  typeCast(field: { type: string; name: string; string(): string | null }, next: () => unknown) {
    // VARBINARY and VARCHAR both report VAR_STRING; as text they read the same.
    if (field.type === "VAR_STRING") return field.string();
    // Namespaces and write channels are BLOBs (exact comparison) holding UTF-8 text.
    if (field.type === "BLOB" && MYSQL_TEXT_BLOBS.has(field.name)) return field.string();
    return next();
  },
};

const MYSQL_TEXT_BLOBS = new Set(["checkpoint_ns", "channel"]);
