/**
 * Asking before a command deletes: --yes goes ahead, a terminal gets a y/N question, and
 * anywhere else the command refuses with exit code 2.
 */
import { createInterface } from "node:readline";
import { CliError, UsageError } from "./errors.js";
import type { CliIo } from "./io.js";
import { escapeTerminal } from "./terminal-text.js";

export interface ConfirmOptions {
  /** --yes: go ahead without asking. */
  yes?: boolean;
  /** The command read its thread ids from stdin, so stdin cannot answer a question. */
  stdinTaken?: boolean;
  /** What stdin holds when it is taken, for the message; "the thread ids" by default. */
  stdinHolds?: string;
}

/** Whether a person can be asked: the question goes to stderr, the answer comes from stdin. */
function interactive(io: CliIo, options: ConfirmOptions): boolean {
  return !options.stdinTaken && io.stdin.isTTY === true && io.stderr.isTTY === true;
}

/**
 * Asks before a command deletes something. With --yes it goes ahead; on a terminal it
 * asks `action` and goes ahead only on "y" or "yes"; anywhere else (a pipe, a CI job,
 * ids read from stdin) it refuses with exit code 2, so a script never deletes by accident.
 */
export async function confirmDeletion(io: CliIo, action: string, options: ConfirmOptions): Promise<void> {
  if (options.yes) return;
  if (!interactive(io, options)) {
    const why = options.stdinTaken ? `stdin holds ${options.stdinHolds ?? "the thread ids"}` : "not on a terminal";
    throw new UsageError(`${action}: ${why}, so nothing was changed; pass --yes to confirm`);
  }
  const answer = await ask(io, `${escapeTerminal(action)}? [y/N] `);
  if (!/^y(es)?$/i.test(answer.trim())) throw new CliError("aborted: nothing was changed");
}

/** One line from the terminal; Ctrl-C or Ctrl-D counts as no answer. */
function ask(io: CliIo, question: string): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: io.stdin, output: io.stderr, terminal: true });
    let done = false;
    const finish = (answer: string, interrupted: boolean) => {
      if (done) return;
      done = true;
      rl.close();
      // Enter moved to the next line; after Ctrl-C or Ctrl-D the cursor is still on the question's.
      if (interrupted) io.stderr.write("\n");
      resolve(answer);
    };
    rl.on("SIGINT", () => finish("", true));
    rl.on("close", () => finish("", true));
    rl.question(question, (answer) => finish(answer, false));
  });
}
