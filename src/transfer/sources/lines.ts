/**
 * The numbered lines of a transfer file, read with a bound on each line's length.
 * readline holds a line whole whatever its size, and a line longer than the
 * longest JavaScript string makes it throw outside any promise, which takes the
 * process down; here a line over the bound is skipped as it streams by and reported
 * as an error of the read that met it, and every failure is a rejected promise.
 */
import { constants } from "node:buffer";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { FileReadError, InvalidInputError, LineTooLongError } from "../../errors.js";

/**
 * Default bound on a line, in bytes: a row whose value is up to 192 MiB (base64
 * makes it 4/3 as long), beyond what the saver is tested with (32 MiB values) and
 * what MariaDB's default `max_allowed_packet` lets it store.
 */
export const DEFAULT_MAX_LINE_BYTES = 256 * 1024 * 1024;

/** The largest bound: a longer line cannot become one JavaScript string. */
export const LARGEST_MAX_LINE_BYTES = constants.MAX_STRING_LENGTH;

/** Checks a `maxLineBytes` option. */
export function checkMaxLineBytes(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_LINE_BYTES;
  if (!Number.isSafeInteger(value) || value < 1 || value > LARGEST_MAX_LINE_BYTES) {
    throw new InvalidInputError(`maxLineBytes must be an integer from 1 to ${LARGEST_MAX_LINE_BYTES}, not ${value}`);
  }
  return value;
}

const NEWLINE = 0x0a;

/** Lines of a stream, one at a time, never more than `maxBytes` of a line held. */
export class LineReader {
  /** 1-based number of the line returned (or refused) last. */
  number = 0;
  private readonly chunks: AsyncIterator<unknown>;
  private chunk: Buffer = Buffer.alloc(0);
  private pos = 0;
  private ended = false;
  /** The stream's failure, thrown again by every later read: nothing after it can be read. */
  private failure: FileReadError | undefined;

  constructor(
    input: Readable,
    private readonly maxBytes: number = DEFAULT_MAX_LINE_BYTES,
  ) {
    this.chunks = input[Symbol.asyncIterator]();
  }

  /**
   * The next line that is not blank (without its `\n` or `\r\n`), or undefined at the end.
   * With `failAt`, a line longer than that is refused as soon as it gets there, unread
   * to its end: a stream without newlines (`/dev/zero`) would otherwise be read forever.
   */
  async next(failAt?: number): Promise<string | undefined> {
    for (;;) {
      const line = await this.readLine(failAt);
      if (line === undefined) return undefined;
      if (line.trim().length > 0) return line;
    }
  }

  /** The next chunk of the stream into `chunk`; false at its end. A failing stream rejects, naming the line. */
  private async fill(): Promise<boolean> {
    if (this.failure) throw this.failure;
    while (!this.ended && this.pos >= this.chunk.length) {
      let result: IteratorResult<unknown>;
      try {
        result = await this.chunks.next();
      } catch (error) {
        this.ended = true;
        const reason = error instanceof Error ? error.message : String(error);
        this.failure = new FileReadError(`line ${this.number + 1}: cannot read the file: ${reason}`, { cause: error });
        throw this.failure;
      }
      if (result.done) this.ended = true;
      else {
        this.chunk = Buffer.isBuffer(result.value) ? result.value : Buffer.from(String(result.value));
        this.pos = 0;
      }
    }
    return this.pos < this.chunk.length;
  }

  private async readLine(failAt = Number.POSITIVE_INFINITY): Promise<string | undefined> {
    const decoder = new StringDecoder("utf8");
    let text = "";
    let bytes = 0;
    let started = false;
    for (;;) {
      if (!(await this.fill())) {
        if (!started) return undefined;
        break;
      }
      started = true;
      const newline = this.chunk.indexOf(NEWLINE, this.pos);
      const end = newline === -1 ? this.chunk.length : newline;
      bytes += end - this.pos;
      if (bytes > failAt) {
        this.number++;
        throw new LineTooLongError(`line ${this.number}: longer than ${failAt} bytes`);
      }
      // Past the bound the rest of the line streams by unread; only its length is counted.
      if (bytes <= this.maxBytes) text += decoder.write(this.chunk.subarray(this.pos, end));
      else text = "";
      this.pos = end + (newline === -1 ? 0 : 1);
      if (newline !== -1) break;
    }
    this.number++;
    if (bytes > this.maxBytes) {
      throw new LineTooLongError(
        `line ${this.number}: ${bytes} bytes long, more than the longest line allowed (${this.maxBytes} bytes: the maxLineBytes option, --max-line-bytes on the command line)`,
      );
    }
    text += decoder.end();
    return text.endsWith("\r") ? text.slice(0, -1) : text;
  }
}
