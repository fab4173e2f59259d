/** Errors the CLI reports as one line on stderr, and the exit codes it uses. */
import { CliError, isFailedStatement } from "../errors.js";
import { redactText, redactUrl } from "./redact.js";

export const EXIT_OK = 0;
/** The operation failed: database error, unknown thread or checkpoint, failed migration. */
export const EXIT_FAILURE = 1;
/** The command line is wrong: unknown option, malformed filter, bad duration or URL. */
export const EXIT_USAGE = 2;

// The CLI's error classes live with every other error (src/errors.ts); their exit codes are the ones above.
export { CliError, UsageError } from "../errors.js";

/** Error codes of a server that cannot be reached (Node sockets, postgres.js, mysql2). */
const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  ETIMEDOUT: "connection timed out",
  CONNECT_TIMEOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ECONNRESET: "connection reset",
  EPIPE: "connection closed",
  CONNECTION_CLOSED: "connection closed",
  CONNECTION_ENDED: "connection closed",
  CONNECTION_DESTROYED: "connection closed",
  PROTOCOL_CONNECTION_LOST: "connection lost",
};

function codeOf(error: unknown): string | undefined {
  if (error === null || typeof error !== "object") return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

/**
 * The error that says what went wrong: drizzle wraps a failed statement in an error
 * whose message is the whole SQL text (see isFailedStatement), and Node reports a refused
 * connection to a host with several addresses as an AggregateError with an empty message.
 */
function rootCause(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 10; depth++) {
    if (current instanceof AggregateError && current.errors.length > 0 && !codeOf(current)) {
      current = current.errors[0];
      continue;
    }
    if (isFailedStatement(current)) {
      current = current.cause;
      continue;
    }
    break;
  }
  return current;
}

export { redactUrl };

function firstLine(text: string): string {
  const line = text.split(/\r?\n/, 1)[0]?.trim() ?? "";
  return line.length > 0 ? line : text.trim();
}

/**
 * A one-line description of any error, for `error: <description>` on stderr, with the
 * passwords of `url` and of any URL it quotes hidden (escaping is left to the printer).
 */
export function describeError(error: unknown, url?: string): string {
  return redactText(describeUnredacted(error, url), url);
}

function describeUnredacted(error: unknown, url?: string): string {
  if (error instanceof CliError) return error.message;
  const cause = rootCause(error);
  const code = codeOf(cause) ?? codeOf(error);
  if (code !== undefined && code in UNREACHABLE) {
    const where = url === undefined ? "the database server" : redactUrl(url);
    return `cannot reach ${where}: ${UNREACHABLE[code]} (${code})`;
  }
  if (cause instanceof Error) {
    const message = firstLine(cause.message) || cause.name;
    return code !== undefined && !message.includes(code) ? `${message} (${code})` : message;
  }
  return firstLine(String(cause));
}

/** The exit code for an error thrown while a command runs. */
export function exitCodeOf(error: unknown): number {
  return error instanceof CliError ? error.exitCode : EXIT_FAILURE;
}

/** The stack traces of an error and its causes, for LANGGRAPH_CHECKPOINT_DEBUG. */
export function stackOf(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && depth < 10; depth++) {
    parts.push(current instanceof Error ? (current.stack ?? String(current)) : String(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join("\ncaused by: ");
}
