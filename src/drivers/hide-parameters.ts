/**
 * Keeps the parameter values of a failed statement, which may hold checkpoint state and
 * secrets, out of its error unless LANGGRAPH_CHECKPOINT_DEBUG=1 is set.
 */
import type { Executor, Runner } from "../sql/executor.js";
import type { CompiledQuery, Statement } from "../sql/statements.js";

/** Set to 1 to keep query parameters in error messages (they may hold checkpoint state and secrets). */
const DEBUG_ENV = "LANGGRAPH_CHECKPOINT_DEBUG";

const debugging = () => /^(1|true|yes)$/i.test(process.env[DEBUG_ENV] ?? "");

const HIDDEN = `params: hidden (set ${DEBUG_ENV}=1 to include them)`;

/** MySQL values travel as hexadecimal literals (see mysql-literals.ts); a server message may quote them. */
const HEX_LITERAL = /X'[0-9a-f]*'/gi;

function rewrite(error: Error, message: string): void {
  const old = error.message;
  error.message = message;
  if (typeof error.stack === "string") error.stack = error.stack.replace(old, message);
}

/**
 * Takes the parameter values out of a failed statement's error: drizzle's
 * DrizzleQueryError prints them all in its message ("params: ..."), mysql2 keeps the
 * SQL text with every value inlined on its error, and PGlite's error keeps them as its
 * `params`. What remains is the statement's text with its placeholders and the
 * database's own message. Errors are changed in place, so their classes, codes and
 * causes stay what callers test for.
 */
function hideParameters(error: unknown, query: CompiledQuery): unknown {
  const debug = debugging();
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++) {
    const fields = current as Error & { query?: unknown; params?: unknown; sql?: unknown; sqlMessage?: unknown };
    if (/^Failed (query|to run the query)/.test(current.message) && "params" in fields) {
      rewrite(current, `Failed query: ${query.sql}\n${debug ? `params: ${query.params}` : HIDDEN}`);
      fields.query = query.sql;
      if (!debug) fields.params = [];
    } else if (!debug) {
      if (typeof fields.sql === "string") fields.sql = query.sql;
      // PGlite's own error (drizzle's cause) carries the statement's values as `params`.
      if (Array.isArray(fields.params)) fields.params = [];
      if (typeof fields.sqlMessage === "string") fields.sqlMessage = fields.sqlMessage.replace(HEX_LITERAL, "X'…'");
      const redacted = current.message.replace(HEX_LITERAL, "X'…'");
      if (redacted !== current.message) rewrite(current, redacted);
    }
    current = current.cause;
  }
  return error;
}

/** An executor whose failed statements throw errors without parameter values (see {@link hideParameters}). */
export function withHiddenParameters(executor: Executor): Executor {
  const guarded = (runner: Runner): Runner => {
    const guard =
      <T>(run: (statement: Statement) => Promise<T>) =>
      async (statement: Statement): Promise<T> => {
        try {
          return await run(statement);
        } catch (error) {
          throw hideParameters(error, executor.compile(statement));
        }
      };
    return {
      all: guard((statement) => runner.all(statement)),
      run: guard((statement) => runner.run(statement)),
      script: guard((statement) => runner.script(statement as Parameters<Runner["script"]>[0])),
    };
  };
  return {
    ...executor,
    ...guarded(executor),
    transaction: (work) => executor.transaction((tx) => work(guarded(tx))),
    batch:
      executor.batch &&
      (async (statements) => {
        try {
          return await (executor.batch as NonNullable<Executor["batch"]>)(statements);
        } catch (error) {
          // A batch's error does not say which statement failed: no text to show, no values either.
          throw hideParameters(error, { sql: "(a batch of statements)", params: [] });
        }
      }),
  };
}
