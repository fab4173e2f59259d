/**
 * One run of the command line over given streams: parses the arguments, runs the command,
 * reports an error in one line, and returns the exit code. The binary (main.ts) runs it on
 * the process's streams; the tests run it on in-memory ones.
 */
import { CommanderError } from "commander";
import { contextUrls, type RunContext } from "./command-kit.js";
import { describeError, EXIT_OK, EXIT_USAGE, exitCodeOf, stackOf } from "./errors.js";
import type { CliIo } from "./io.js";
import { Output } from "./output.js";
import { buildProgram } from "./program.js";
import { redactText } from "./redact.js";
import { escapeTerminal } from "./terminal-text.js";

/** Set to print the stack trace of an error as well (for bug reports). */
const DEBUG_ENV = "LANGGRAPH_CHECKPOINT_DEBUG";

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  // The command stores its database URLs here, so an error can name the server it could not reach.
  const context: RunContext = {};
  try {
    const program = buildProgram(new Output(io), context);
    await program.parseAsync(argv, { from: "user" });
    return EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // commander has printed its message (or the help); only the exit code is left.
      return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    io.stderr.write(`error: ${escapeTerminal(describeError(error, contextUrls(context)))}\n`);
    if (process.env[DEBUG_ENV]) {
      io.stderr.write(`${escapeTerminal(redactText(stackOf(error), contextUrls(context)), { keepNewlines: true })}\n`);
    }
    return exitCodeOf(error);
  }
}
