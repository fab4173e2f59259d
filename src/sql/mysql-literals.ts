/**
 * The values of a MySQL statement written into its text as literals no sql_mode changes
 * (hexadecimal text and bytes, plain numbers), instead of mysql2's backslash escaping.
 */
import type { CompiledQuery } from "./statements.js";

/**
 * mysql2 interpolates parameters into the SQL text on the client, escaping quotes
 * with backslashes: on a server whose sql_mode has NO_BACKSLASH_ESCAPES a backslash
 * is an ordinary character there, and a value such as `\' or 1=1 -- ` ends its string
 * early. The saver therefore writes every value itself as a literal whose meaning no
 * sql_mode changes: text and bytes as hexadecimal literals (text with the utf8mb4
 * introducer), numbers as numbers. No quote or backslash from a value ever reaches
 * the SQL text, on any server, through any pool.
 */
export function mysqlLiteral(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  switch (typeof value) {
    case "string":
      return `_utf8mb4 X'${Buffer.from(value, "utf8").toString("hex")}'`;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`cannot send ${value} to MySQL`);
      return String(value);
    case "bigint":
      return value.toString();
    case "boolean":
      return value ? "true" : "false";
  }
  if (value instanceof Uint8Array) {
    return `X'${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex")}'`;
  }
  throw new TypeError(`unsupported MySQL parameter type: ${Object.prototype.toString.call(value)}`);
}

/** The length of {@link mysqlLiteral}`(value)`, without building it (a large value's hex may exceed a string's maximum). */
export function mysqlLiteralLength(value: unknown): number {
  if (typeof value === "string") return "_utf8mb4 X''".length + 2 * Buffer.byteLength(value, "utf8");
  if (value instanceof Uint8Array) return "X''".length + 2 * value.byteLength;
  return mysqlLiteral(value).length;
}

/** Quoted identifiers and literals, comments, or a `?` placeholder of the statement's own text. */
const TOKENS = /`(?:[^`]|``)*`|'(?:[^'\\]|''|\\.)*'|"(?:[^"\\]|""|\\.)*"|--[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/|\?/g;

/** The query with its `?` placeholders replaced by {@link mysqlLiteral}s, and no parameters left. */
export function inlineParameters(query: CompiledQuery): CompiledQuery {
  if (query.params.length === 0) return query;
  let next = 0;
  const text = query.sql.replace(TOKENS, (token) => {
    if (token !== "?") return token;
    if (next >= query.params.length) throw new Error("MySQL statement has more placeholders than parameters");
    return mysqlLiteral(query.params[next++]);
  });
  if (next !== query.params.length) throw new Error("MySQL statement has fewer placeholders than parameters");
  return { sql: text, params: [] };
}
