/**
 * Which kind of database a URL names, and the SQLite file it names. `fromUrl`, the
 * transfer sources and the CLI all decide by these, so a URL one of them accepts
 * (mariadb://, a file: URL) means the same database to every one of them.
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { InvalidInputError } from "./errors.js";

/** The SQL dialects: MariaDB is "mysql", as it is for the saver. */
export type DatabaseFamily = "postgres" | "mysql" | "sqlite";

/** A Map, not an object: a scheme such as "constructor" must not find Object's prototype. */
const FAMILIES: ReadonlyMap<string, DatabaseFamily> = new Map([
  ["postgres", "postgres"],
  ["postgresql", "postgres"],
  ["mysql", "mysql"],
  ["mariadb", "mysql"],
  ["file", "sqlite"],
]);

/** The URL's scheme in lower case ("name:", two letters at least, so a Windows drive is a path), if any. */
export function urlScheme(url: string): string | undefined {
  return /^([a-z][a-z0-9+.-]+):/i.exec(url)?.[1]?.toLowerCase();
}

/**
 * The family of the database a URL names: postgres:// and postgresql://, mysql:// and
 * mariadb://, and SQLite as file:<path>, a plain path or ":memory:". Throws an
 * InvalidInputError for any other scheme.
 */
export function databaseFamily(url: string): DatabaseFamily {
  const scheme = urlScheme(url) ?? "file";
  const family = FAMILIES.get(scheme);
  if (family === undefined) {
    throw new InvalidInputError(
      `unsupported database URL scheme "${scheme}://": use postgres://, postgresql://, mysql://, mariadb://, file:<path>, :memory: or a file path`,
    );
  }
  return family;
}

/**
 * The SQLite file a URL names, or undefined for a server URL. `file:` URLs are read
 * with the WHATWG URL parser: percent-escapes are decoded and the query is not part
 * of the name; `file:x.db` is relative to the working directory. A plain path is taken
 * as it is; ":memory:" is an in-memory database.
 */
export function sqliteFile(url: string): string | undefined {
  const scheme = urlScheme(url);
  if (scheme !== undefined && scheme !== "file") return undefined;
  if (scheme === undefined) return url;
  const rest = url.slice("file:".length);
  const name = rest.split(/[?#]/, 1)[0];
  if (name === ":memory:") return ":memory:";
  if (name.length === 0 || name === "//") throw new InvalidInputError("the SQLite URL names no file");
  let parsed: URL;
  try {
    parsed = rest.startsWith("//") ? new URL(url) : new URL(rest, pathToFileURL(`${process.cwd()}/`));
  } catch {
    // Not Node's error: it carries the URL, which may hold a password, as its `input`.
    throw new InvalidInputError("the SQLite URL cannot be parsed as a file: URL");
  }
  try {
    return fileURLToPath(parsed);
  } catch (error) {
    throw new InvalidInputError(`the SQLite URL "${url}" names no local file`, { cause: error });
  }
}
