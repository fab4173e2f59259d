/**
 * The streams a command-line run reads and writes: the process's own when the binary runs,
 * in-memory ones when the tests run a command inside their process.
 */
import type { Readable, Writable } from "node:stream";

export interface CliIo {
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean };
}

export function processIo(): CliIo {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
}
