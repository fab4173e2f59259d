import { execFile, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { promisify } from "node:util";
import { expect } from "vitest";
import { runCli } from "../../src/cli/run.js";
import type { DialectName } from "../helpers/databases.js";

const root = resolve(import.meta.dirname, "../..");

/** The binary as package.json declares it ("bin"), so the tests run what npm installs. */
export const BIN = resolve(
  root,
  (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { bin: Record<string, string> }).bin[
    "langgraph-checkpoint-drizzle"
  ],
);

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function builtAt(): number {
  try {
    return statSync(BIN).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * Runs `npm run build` unless dist/ is newer than every file of src/. Test files run
 * in parallel workers, so a lock directory makes them build once, one at a time.
 */
export async function ensureBuilt(): Promise<void> {
  const lock = join(tmpdir(), `lgcd-cli-build-${Buffer.from(root).toString("hex").slice(-24)}.lock`);
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another worker is building; a lock older than 5 minutes was left by a killed run.
      try {
        if (Date.now() - statSync(lock).mtimeMs > 5 * 60_000) rmSync(lock, { recursive: true, force: true });
      } catch {}
      if (Date.now() > deadline) throw new Error(`timed out waiting for the build lock ${lock}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (builtAt() > newestMtime(join(root, "src"))) return;
    try {
      await promisify(execFile)("npm", ["run", "build"], { cwd: root, timeout: 10 * 60_000 });
    } catch (error) {
      const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
      throw new Error(`npm run build failed:\n${stdout}\n${stderr}`);
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The variables the CLI reads its URL and table layout from: unset unless a test sets them. */
const CLI_VARIABLES = {
  LANGGRAPH_CHECKPOINT_URL: undefined,
  LANGGRAPH_CHECKPOINT_TABLE_PREFIX: undefined,
  LANGGRAPH_CHECKPOINT_SCHEMA: undefined,
  LANGGRAPH_CHECKPOINT_MIGRATIONS_TABLE: undefined,
  LANGGRAPH_CHECKPOINT_MIGRATIONS_SCHEMA: undefined,
};

/** The environment of a CLI run: this process's, with the URL and layout variables unset. */
export function cliEnv(): Record<string, string | undefined> {
  return { ...process.env, ...CLI_VARIABLES };
}

interface CliOptions {
  env?: Record<string, string>;
  input?: string;
  asNobody?: boolean;
}

/** A stream that keeps what is written to it, as the tests read a command's stdout and stderr. */
function collector(): Writable & { text(): string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      callback();
    },
  });
  return Object.assign(stream, { text: () => Buffer.concat(chunks).toString("utf8") });
}

let running = false;

/**
 * Runs a command inside this process (src/cli/run.ts, as the binary does) on in-memory
 * streams, with the URL and layout variables unset unless `env` sets them: the same
 * program at a fraction of a process's start-up. What only a process shows (exit on a
 * closed pipe, file permissions of another user, two processes at once) goes through
 * `cliProcess`, which runs the built binary.
 */
export async function cli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  if (options.asNobody) return cliProcess(args, options);
  // The variables are process-wide: two commands at once would see each other's.
  if (running) throw new Error("cli(): one command at a time in a process; use cliProcess for concurrent runs");
  running = true;
  const variables = { ...CLI_VARIABLES, ...options.env };
  const saved = Object.fromEntries(Object.keys(variables).map((name) => [name, process.env[name]]));
  const assign = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  const stdout = collector();
  const stderr = collector();
  try {
    assign(variables);
    const code = await runCli(args, { stdin: new PassThrough().end(options.input ?? ""), stdout, stderr });
    return { code, stdout: stdout.text(), stderr: stderr.text() };
  } finally {
    assign(saved);
    running = false;
  }
}

/** Runs `node <bin> ...args` with the URL and layout variables unset (unless `env` sets them). */
export function cliProcess(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const env: Record<string, string | undefined> = { ...process.env, ...CLI_VARIABLES };
  Object.assign(env, options.env);
  const asNobody = options.asNobody === true && process.getuid?.() === 0;
  const [command, prefix] = asNobody ? ["runuser", ["-u", "nobody", "--", process.execPath]] : [process.execPath, []];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, [...prefix, BIN, ...args], { cwd: root, env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });
}

/** The parsed lines of a JSON-lines output. */
export function jsonLines<T = Record<string, unknown>>(stdout: string): T[] {
  return stdout
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as T);
}

/** A user error: non-zero exit, nothing on stdout, exactly one line on stderr, no stack trace. */
export function expectOneLineError(result: CliResult, code: number, pattern: RegExp): void {
  const context = JSON.stringify(result);
  expect(result.code, context).toBe(code);
  expect(result.stdout, context).toBe("");
  const lines = result.stderr.trimEnd().split("\n");
  expect(lines, context).toHaveLength(1);
  expect(lines[0], context).toMatch(/^error: /);
  expect(lines[0], context).toMatch(pattern);
  expect(result.stderr, context).not.toMatch(/\bat .+:\d+:\d+/);
}

export { rawQuery } from "../helpers/raw.js";

/** Migrations in the shipped journal of a dialect, oldest first. */
export function journalTags(dialect: DialectName): string[] {
  const folder = { sqlite: "sqlite", postgres: "pg", mysql: "mysql" }[dialect];
  const journal = JSON.parse(readFileSync(join(root, "migrations", folder, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string }[];
  };
  return journal.entries.map((entry) => entry.tag);
}

/** Runs the binary and closes its stdout after `lines` lines, like `| head -n lines`. */
export function cliHead(args: string[], lines: number): Promise<CliResult> {
  const env: Record<string, string | undefined> = { ...process.env, ...CLI_VARIABLES };
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      if (stdout.split("\n").length > lines) {
        stdout = stdout.split("\n").slice(0, lines).join("\n");
        child.stdout.destroy();
      }
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/**
 * Runs the binary as a user who cannot write where root could: as "nobody" when this
 * runs as root (root ignores file permissions).
 */
export function cliAsNobody(args: string[]): Promise<CliResult> {
  return cliProcess(args, { asNobody: true });
}
