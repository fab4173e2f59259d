// Line protocol of the reliability workers: one JSON object per line on stdout.
import { openSync, writeSync } from "node:fs";
import { createInterface } from "node:readline";

// The journal file is the record of what was acknowledged: a write(2) to a file has reached the kernel when it
// returns, so a SIGKILL right after cannot lose it. stdout to a pipe is not enough: when the parent reads slowly,
// Node queues the line in the process, and a kill drops it.
const journal = process.env.RELIABILITY_JOURNAL ? openSync(process.env.RELIABILITY_JOURNAL, "a") : undefined;

/** Records a message in the journal, then tells the parent on stdout (which it uses to wait for events). */
export function emit(message: Record<string, unknown> & { kind: string }): void {
  const line = `${JSON.stringify(message)}\n`;
  if (journal !== undefined) writeSync(journal, line);
  process.stdout.write(line);
}

/** The JSON argument every worker is started with. */
export function argument<T>(): T {
  const raw = process.argv[2];
  if (!raw) throw new Error("worker started without its JSON argument");
  return JSON.parse(raw) as T;
}

/** Resolves when the parent writes "go" on stdin: lets several processes start an operation at the same instant. */
export function barrier(): Promise<void> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: process.stdin });
    lines.on("line", (line) => {
      if (line.trim() === "go") {
        resolve();
        lines.close();
      }
    });
    lines.on("close", () => reject(new Error("stdin closed before go")));
  });
}

/** Runs a worker body: reports an uncaught failure as an error message and exit code 1. */
export async function run(body: () => Promise<void>): Promise<void> {
  try {
    await body();
    process.exit(0);
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined;
    emit({ kind: "error", message, cause });
    process.exit(1);
  }
}
