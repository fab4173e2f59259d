/** Errors the CLI reports as one line on stderr, and the exit codes it uses. */
import { CliError, isFailedStatement } from "../errors.js";
import { redactText, redactUrl, serverOf } from "./redact.js";

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
 * passwords of `urls` (the databases the command uses, its target first) and of any URL
 * it quotes hidden (escaping is left to the printer).
 */
export function describeError(error: unknown, urls: readonly string[] = []): string {
  return redactText(describeUnredacted(error, urls), urls);
}

function describeUnredacted(error: unknown, urls: readonly string[]): string {
  if (error instanceof CliError) return error.message;
  const cause = rootCause(error);
  const code = codeOf(cause) ?? codeOf(error);
  if (code !== undefined && code in UNREACHABLE) {
    return `cannot reach ${unreachableServer(cause, urls)}: ${UNREACHABLE[code]} (${code})`;
  }
  if (cause instanceof Error) {
    const message = firstLine(cause.message) || cause.name;
    return code !== undefined && !message.includes(code) ? `${message} (${code})` : message;
  }
  return firstLine(String(cause));
}

/**
 * Which of the command's databases a connection error is about (an import reads one and
 * writes another): the one at the host and port the error names, else the only one on
 * that port or of that host name; the target when the error names neither.
 */
function unreachableServer(cause: unknown, urls: readonly string[]): string {
  if (urls.length <= 1) return urls.length === 1 ? redactUrl(urls[0]) : "the database server";
  const { address, port, hostname } = (cause ?? {}) as { address?: unknown; port?: unknown; hostname?: unknown };
  const host = typeof address === "string" ? address : typeof hostname === "string" ? hostname : undefined;
  const servers = urls.map((url) => ({ url, server: serverOf(url) }));
  const samePort = servers.filter(({ server }) => port === undefined || server?.port === port);
  const named =
    samePort.find(({ server }) => host !== undefined && server?.host === host.toLowerCase()) ??
    (samePort.length === 1 && port !== undefined ? samePort[0] : undefined);
  if (named) return redactUrl(named.url);
  return host !== undefined && typeof port === "number" ? `the database server at ${host}:${port}` : redactUrl(urls[0]);
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
