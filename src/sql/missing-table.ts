/**
 * Which database errors say that a table does not exist, on every family: a read of a
 * table the database may lack (an older schema, an application's own prefix) tells that
 * case apart from every other failure, which must not pass for "no table".
 */

/** Error codes of a missing table or schema: PostgreSQL, MySQL/MariaDB. SQLite says so in its message. */
const MISSING_TABLE_CODES = new Set(["42P01", "3F000", "ER_NO_SUCH_TABLE"]);

/** Whether `error`, or an error it was caused by, says that a table does not exist. */
export function isMissingTableError(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && MISSING_TABLE_CODES.has(code)) return true;
    if (/no such table/i.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}
