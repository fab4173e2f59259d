#!/usr/bin/env node
import { CommanderError } from "commander";
import { describeError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, exitCodeOf, stackOf } from "./errors.js";
import { Output } from "./output.js";
import { buildProgram } from "./program.js";
import { redactText } from "./redact.js";
import { escapeTerminal } from "./terminal-text.js";

/** Set to print the stack trace of an error as well (for bug reports). */
const DEBUG_ENV = "LANGGRAPH_CHECKPOINT_DEBUG";

async function main(argv: string[]): Promise<number> {
  // The command stores its database URL here, so an error can name the server it could not reach.
  const context: { url?: string } = {};
  const program = buildProgram(new Output(), context);
  try {
    await program.parseAsync(argv, { from: "user" });
    return EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // commander has printed its message (or the help); only the exit code is left.
      return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    process.stderr.write(`error: ${escapeTerminal(describeError(error, context.url))}\n`);
    if (process.env[DEBUG_ENV]) {
      process.stderr.write(`${escapeTerminal(redactText(stackOf(error), context.url), { keepNewlines: true })}\n`);
    }
    return exitCodeOf(error);
  }
}

const code = await main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`error: ${escapeTerminal(describeError(error))}\n`);
  return EXIT_FAILURE;
});
process.exitCode = code;
// A driver that keeps a socket or timer open must not keep the finished program alive.
setTimeout(() => process.exit(code), 5_000).unref();
