#!/usr/bin/env node
/** The langgraph-checkpoint-drizzle binary: one run of the command line on this process's streams. */
import { describeError, EXIT_FAILURE } from "./errors.js";
import { processIo } from "./io.js";
import { runCli } from "./run.js";
import { escapeTerminal } from "./terminal-text.js";

// Ctrl-C or a kill ends the run through process.exit, whose handlers remove what must not
// be left behind (an unfinished export file); the default action would end it at once.
for (const [signal, exitCode] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const) {
  process.once(signal, () => process.exit(exitCode));
}

const code = await runCli(process.argv.slice(2), processIo()).catch((error: unknown) => {
  process.stderr.write(`error: ${escapeTerminal(describeError(error))}\n`);
  return EXIT_FAILURE;
});
process.exitCode = code;
// A driver that keeps a socket or timer open must not keep the finished program alive.
setTimeout(() => process.exit(code), 5_000).unref();
