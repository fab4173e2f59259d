/**
 * What the CLI prints on stdout: escaped lines and JSON lines, tables sized from their first
 * rows, and decoded values made JSON-safe.
 */
import { isBaseMessage } from "@langchain/core/messages";
import type { CliIo } from "./io.js";
import { escapeTerminal } from "./terminal-text.js";

/**
 * Writes to stdout, waiting for the stream to drain so a long stream of rows never
 * piles up in memory; a closed pipe (`... | head`) ends the program quietly. `io` is the
 * run's streams, for the commands that read stdin or report on stderr.
 */
export class Output {
  private closed = false;
  private readonly stream: CliIo["stdout"];

  constructor(readonly io: CliIo) {
    this.stream = io.stdout;
    this.stream.on("error", (error: NodeJS.ErrnoException) => {
      // The reader went away (`| head`): stop quietly. Anything else cannot be reported on stdout.
      this.closed = true;
      if (error.code !== "EPIPE") io.stderr.write(`error: cannot write the output: ${error.message}\n`);
      process.exit(error.code === "EPIPE" ? (process.exitCode ?? 0) : 1);
    });
  }

  /** A line on stderr (a warning, or a summary when stdout carries a file), escaped like every line. */
  warn(text: string): void {
    this.io.stderr.write(`${escapeTerminal(text)}\n`);
  }

  /** Every line printed goes through here, so nothing unescaped from a row reaches the terminal. */
  async line(text = ""): Promise<void> {
    if (this.closed) return;
    if (!this.stream.write(`${escapeTerminal(text, { keepNewlines: true })}\n`)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.stream.off("drain", done);
          this.stream.off("close", done);
          resolve();
        };
        this.stream.on("drain", done);
        this.stream.on("close", done);
      });
    }
  }

  /** One JSON document on one line (the JSON-lines format of the streaming commands). */
  async json(value: unknown): Promise<void> {
    await this.line(JSON.stringify(toPlain(value)));
  }
}

export interface Column {
  header: string;
  align?: "left" | "right";
}

/** A value for one table cell or field: a newline in a thread id would break the row, so it is escaped too. */
export function cell(value: unknown): string {
  return escapeTerminal(value === undefined || value === null ? "" : String(value));
}

/** Adds a key as an own property: plain assignment of "__proto__" would set the prototype instead. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function width(text: string): number {
  return [...text].length;
}

/**
 * A table printed while its rows arrive: the first rows (at most `sample`) are held
 * to size the columns, later rows use those widths (a longer value just widens its row).
 */
export class StreamingTable {
  private held: string[][] | undefined = [];
  private widths: number[] = [];
  private count = 0;

  constructor(
    private readonly out: Output,
    private readonly columns: Column[],
    private readonly sample = 100,
  ) {}

  async row(cells: string[]): Promise<void> {
    this.count++;
    if (this.held) {
      this.held.push(cells);
      if (this.held.length >= this.sample) await this.flush();
      return;
    }
    await this.out.line(this.format(cells));
  }

  /** Prints what is held; returns the number of rows. Prints nothing for an empty table. */
  async end(): Promise<number> {
    if (this.held && this.held.length > 0) await this.flush();
    this.held = undefined;
    return this.count;
  }

  private async flush(): Promise<void> {
    const held = this.held ?? [];
    this.held = undefined;
    this.widths = this.columns.map((column, i) =>
      Math.max(width(column.header), ...held.map((cells) => width(cells[i] ?? ""))),
    );
    await this.out.line(
      this.format(
        this.columns.map((column) => column.header),
        true,
      ),
    );
    for (const cells of held) await this.out.line(this.format(cells));
  }

  private format(cells: string[], header = false): string {
    const last = this.columns.length - 1;
    return this.columns
      .map((column, i) => {
        const text = cells[i] ?? "";
        const pad = " ".repeat(Math.max(0, this.widths[i] - width(text)));
        if (column.align === "right" && !header) return pad + text;
        return i === last ? text : text + pad;
      })
      .join("  ")
      .trimEnd();
  }
}

/** Prints a small, complete table (no streaming). */
export async function printTable(out: Output, columns: Column[], rows: string[][], indent = ""): Promise<void> {
  const widths = columns.map((column, i) => Math.max(width(column.header), ...rows.map((r) => width(r[i] ?? ""))));
  const format = (cells: string[], header: boolean) =>
    indent +
    columns
      .map((column, i) => {
        const text = cells[i] ?? "";
        const pad = " ".repeat(Math.max(0, widths[i] - width(text)));
        if (column.align === "right" && !header) return pad + text;
        return i === columns.length - 1 ? text : text + pad;
      })
      .join("  ")
      .trimEnd();
  await out.line(
    format(
      columns.map((c) => c.header),
      true,
    ),
  );
  for (const row of rows) await out.line(format(row, false));
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nouns}`;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === null || proto === Object.prototype;
}

/**
 * A JSON-safe copy of a decoded value: LangChain messages become `{ type, content, ... }`
 * (empty fields left out), dates ISO strings, bytes `{ "$bytes": base64 }`, maps objects
 * (or `{ "$map": entries }` when a key is not a string), sets arrays, bigints strings,
 * errors `{ name, message }`; a cycle becomes "[Circular]".
 */
export function toPlain(value: unknown, seen: Set<object> = new Set()): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "bigint") return value.toString();
  if (value === undefined || typeof value === "function" || typeof value === "symbol") return null;
  if (seen.has(value)) return "[Circular]";
  seen.add(value);
  try {
    if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
    if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString("base64") };
    if (value instanceof RegExp) return String(value);
    if (Array.isArray(value)) return value.map((item) => toPlain(item, seen));
    if (value instanceof Set) return [...value].map((item) => toPlain(item, seen));
    if (value instanceof Map) {
      const entries = [...value.entries()];
      if (entries.every(([key]) => typeof key === "string")) {
        return Object.fromEntries(entries.map(([key, item]) => [key, toPlain(item, seen)]));
      }
      return { $map: entries.map(([key, item]) => [toPlain(key, seen), toPlain(item, seen)]) };
    }
    if (isBaseMessage(value)) {
      const { data } = value.toDict();
      const fields: Record<string, unknown> = { type: value.getType() };
      for (const [key, item] of Object.entries(data)) {
        if (item === undefined || item === null) continue;
        if (Array.isArray(item) && item.length === 0) continue;
        if (typeof item === "object" && !Array.isArray(item) && Object.keys(item).length === 0) continue;
        setOwn(fields, key, toPlain(item, seen));
      }
      return fields;
    }
    if (value instanceof Error) return { name: value.name, message: value.message };
    const withToJson = value as { toJSON?: unknown };
    if (!isPlainObject(value) && typeof withToJson.toJSON === "function") {
      return toPlain((withToJson.toJSON as () => unknown).call(value), seen);
    }
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) setOwn(result, key, toPlain(item, seen));
    }
    return result;
  } finally {
    seen.delete(value);
  }
}

/** A decoded value as JSON: on one line when it fits in `room` characters, indented otherwise. */
export function formatValue(value: unknown, room: number, indent: string): string {
  const plain = toPlain(value);
  const compact = JSON.stringify(plain) ?? "null";
  if (compact.length <= room) return compact;
  return (JSON.stringify(plain, null, 2) ?? "null").split("\n").join(`\n${indent}`);
}
