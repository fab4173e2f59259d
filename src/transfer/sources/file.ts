/** A transfer file as a source: reads and checks its lines (bounded in length) and yields each thread's records. */
import { createReadStream, existsSync } from "node:fs";
import type { Readable } from "node:stream";
import { FileReadError, InvalidInputError, LineTooLongError } from "../../errors.js";
import { checkHeader, type FileLine, parseLine } from "../format.js";
import {
  countRecord,
  noRecords,
  type ThreadSelection,
  type ThreadStream,
  type TransferRecord,
  type TransferSource,
} from "../records.js";
import { checkMaxLineBytes, LineReader } from "./lines.js";

export interface FileReadOptions {
  /** The longest line read, in bytes; a longer one fails its thread (default 256 MiB, DEFAULT_MAX_LINE_BYTES). */
  maxLineBytes?: number;
}

/** The longest first line read before the file is refused as not a transfer file. */
const HEADER_MAX_BYTES = 64 * 1024;

/**
 * A transfer file as a source. Threads are yielded as they come; an error inside a
 * thread (a malformed line, counts that do not match its `end` line, the file ending
 * inside it) fails that thread only, and reading goes on at the next `thread` line.
 */
export class FileSource implements TransferSource {
  readonly description = "transfer file";
  private readonly reader: LineReader;
  private readonly wanted?: Set<string>;
  private ended = false;

  constructor(
    private readonly input: Readable,
    selection: ThreadSelection = {},
    options: FileReadOptions = {},
  ) {
    this.reader = new LineReader(input, checkMaxLineBytes(options.maxLineBytes));
    if (selection.filter) throw new InvalidInputError("a metadata filter cannot be applied when reading a file");
    if (selection.threadIds) this.wanted = new Set(selection.threadIds);
  }

  static open(path: string, selection?: ThreadSelection, options: FileReadOptions = {}): FileSource {
    if (path !== "-" && !existsSync(path)) throw new InvalidInputError(`no file at "${path}"`);
    const maxLineBytes = checkMaxLineBytes(options.maxLineBytes);
    return new FileSource(path === "-" ? process.stdin : createReadStream(path), selection, { maxLineBytes });
  }

  async countThreads(): Promise<undefined> {
    return undefined;
  }

  async close(): Promise<void> {
    if (this.input !== process.stdin) this.input.destroy();
  }

  private async nextLine(failAt?: number): Promise<FileLine | undefined> {
    const text = await this.reader.next(failAt);
    return text === undefined ? undefined : parseLine(text, this.reader.number);
  }

  async *threads(): AsyncGenerator<ThreadStream> {
    let header: FileLine | undefined;
    try {
      // The header is a short line: anything much longer (a device such as /dev/zero, a
      // binary file without newlines) is no transfer file, said without reading it all.
      header = await this.nextLine(HEADER_MAX_BYTES);
    } catch (error) {
      // A line that does not parse is reported by checkHeader as "not a transfer file".
      if (error instanceof FileReadError) throw error;
    }
    checkHeader(header);
    let threads = 0;
    // The line of each thread's "thread" line: a thread given again would replace or
    // clash with what the first gave (a file gives a thread once).
    const firstLines = new Map<string, number>();
    let line = await this.nextLine();
    for (;;) {
      if (line === undefined) {
        throw new InvalidInputError(`line ${this.reader.number}: the file ends without its footer line (truncated?)`);
      }
      if (line.kind === "footer") {
        if (line.threads !== threads) {
          throw new InvalidInputError(
            `line ${this.reader.number}: the footer counts ${line.threads} threads, the file has ${threads}`,
          );
        }
        this.ended = true;
        return;
      }
      if (line.kind !== "thread") {
        throw new InvalidInputError(`line ${this.reader.number}: expected a "thread" line, found "${line.kind}"`);
      }
      threads++;
      const { threadId } = line;
      const first = firstLines.get(threadId);
      if (first === undefined) firstLines.set(threadId, this.reader.number);
      const stream =
        first === undefined ? this.threadRecords(threadId) : this.givenAgain(threadId, first, this.reader.number);
      if (!this.wanted || this.wanted.has(threadId)) yield { threadId, records: stream };
      // Whatever the consumer left unread (or an error left behind) is skipped here.
      line = await this.skipToNextThread(stream);
    }
  }

  /** Finishes a thread's records; after a bad line, skips to the next thread or the footer. */
  private async skipToNextThread(stream: AsyncGenerator<TransferRecord>): Promise<FileLine | undefined> {
    try {
      for await (const _ of stream) {
        // draining
      }
    } catch {
      // The consumer saw this error when it read the thread (or did not select it).
    }
    if (this.pendingLine !== null) {
      const line = this.pendingLine;
      this.pendingLine = null;
      return line;
    }
    for (;;) {
      let text: string | undefined;
      try {
        text = await this.reader.next();
      } catch (error) {
        // A line too long to read is not a thread line: keep looking. A failing stream ends the file.
        if (error instanceof LineTooLongError) continue;
        throw error;
      }
      if (text === undefined) return undefined;
      if (!/"kind"\s*:\s*"(thread|footer)"/.test(text)) continue;
      try {
        return parseLine(text, this.reader.number);
      } catch {
        // a damaged line: keep looking
      }
    }
  }

  /** The records of a thread given a second time: none, its failure. */
  // biome-ignore lint/correctness/useYield: a stream that fails before its first record
  private async *givenAgain(threadId: string, first: number, at: number): AsyncGenerator<TransferRecord> {
    throw new InvalidInputError(
      `line ${at}: thread ${JSON.stringify(threadId)} is given a second time (first at line ${first}); a file gives a thread once`,
    );
  }

  /** A line read past a thread's end (the next thread or the footer), handed to `threads()`. */
  private pendingLine: FileLine | undefined | null = null;

  private async *threadRecords(threadId: string): AsyncGenerator<TransferRecord> {
    const counts = noRecords();
    for (;;) {
      const line = await this.nextLine();
      if (line === undefined) {
        throw new InvalidInputError(
          `line ${this.reader.number}: the file ends inside thread "${threadId}" (truncated?)`,
        );
      }
      if (line.kind === "record") {
        countRecord(counts, line.record);
        yield line.record;
        continue;
      }
      if (line.kind === "abort") {
        throw new InvalidInputError(
          `line ${this.reader.number}: the export of thread "${threadId}" failed: ${line.error}`,
        );
      }
      if (line.kind === "thread" || line.kind === "footer") this.pendingLine = line;
      if (line.kind !== "end" || line.threadId !== threadId) {
        throw new InvalidInputError(
          `line ${this.reader.number}: thread "${threadId}" has no "end" line (found "${line.kind}"; truncated?)`,
        );
      }
      const expected = line.counts;
      if (
        expected.checkpoints !== counts.checkpoints ||
        expected.blobs !== counts.blobs ||
        expected.writes !== counts.writes
      ) {
        throw new InvalidInputError(
          `line ${this.reader.number}: thread "${threadId}" should have ${expected.checkpoints} checkpoints, ${expected.blobs} blobs and ${expected.writes} writes; the file has ${counts.checkpoints}, ${counts.blobs} and ${counts.writes}`,
        );
      }
      this.pendingLine = null;
      return;
    }
  }

  /** Whether the footer was read: the whole file arrived. */
  get complete(): boolean {
    return this.ended;
  }
}
