/**
 * Reusable statements. drizzle assembles SQL text from its `sql` objects on every
 * call, which costs more Node CPU than a small statement costs the database. The
 * saver's frequent statements are therefore templates: built once per shape with
 * `sql.placeholder(name)` where the values go, compiled once per dialect, and run
 * with their values.
 */
import { is, Param, Placeholder, SQL, sql } from "drizzle-orm";

/** Values of a template's placeholders, by name. */
export type Values = Record<string, unknown>;

/** A template and the values of its placeholders. */
export interface Bound {
  template: SQL;
  values: Values;
}

/** What the dialects run: plain SQL (values inline), or a template with its values. */
export type Statement = SQL | Bound;

export interface CompiledQuery {
  sql: string;
  params: unknown[];
}

export const isBound = (statement: Statement): statement is Bound => !is(statement, SQL);

/** Values as a comma-separated list of bound parameters, as `in (...)` and row values take them. */
export const valueList = (values: readonly unknown[]): SQL =>
  sql.join(
    values.map((value) => sql`${value}`),
    sql`, `,
  );

/**
 * Predicates joined by `op` as a balanced tree of parentheses: SQLite refuses an expression
 * tree deeper than 1000, which a flat chain of a few hundred terms reaches.
 */
function balanced(parts: SQL[], op: SQL): SQL {
  if (parts.length <= 2) return sql`(${sql.join(parts, op)})`;
  const half = Math.ceil(parts.length / 2);
  return sql`(${balanced(parts.slice(0, half), op)}${op}${balanced(parts.slice(half), op)})`;
}

/** All of `parts` (see {@link balanced}); true for none. */
export const allOf = (parts: SQL[]): SQL => (parts.length === 0 ? sql`(1 = 1)` : balanced(parts, sql` and `));

/** Any of `parts` (see {@link balanced}); false for none. */
export const anyOf = (parts: SQL[]): SQL => (parts.length === 0 ? sql`(1 = 0)` : balanced(parts, sql` or `));

/** Combines statements into one SQL text (see statementCombiner). */
export type StatementCombiner = (kind: string, parts: Statement[], build: (parts: SQL[]) => SQL) => Statement;

/**
 * Statements combined into one SQL text by `build`. When every part is a template,
 * so is the result, made once per combination.
 */
export function statementCombiner(): StatementCombiner {
  const ids = new WeakMap<SQL, number>();
  const combined = new LruCache<SQL>(200);
  let nextId = 0;
  const idOf = (template: SQL) => {
    let id = ids.get(template);
    if (id === undefined) {
      id = nextId++;
      ids.set(template, id);
    }
    return id;
  };
  return (kind, parts, build) => {
    const sqls = parts.map((part) => (isBound(part) ? part.template : part));
    const values = Object.assign({}, ...parts.map((part) => (isBound(part) ? part.values : {})));
    if (!parts.every(isBound)) return { template: build(sqls), values };
    const key = `${kind}:${parts.map((part) => idOf((part as Bound).template)).join(",")}`;
    return { template: combined.get(key, () => build(sqls)), values };
  };
}

/**
 * Where a compiled template's parameter comes from: a placeholder's value by name
 * (through the column's encoder when the placeholder was a column's value), or the
 * parameter itself. Worked out once per template, so a call does no `is` checks.
 */
type Slot =
  | { kind: "value"; name: string }
  | { kind: "encoded"; name: string; encoder: Param["encoder"] }
  | { kind: "constant"; value: unknown };

function slotOf(param: unknown): Slot {
  if (is(param, Placeholder)) return { kind: "value", name: param.name as string };
  if (is(param, Param) && is(param.value, Placeholder))
    return { kind: "encoded", name: param.value.name as string, encoder: param.encoder };
  return { kind: "constant", value: param };
}

/** What drizzle's `fillPlaceholders` does, over slots worked out beforehand (same errors). */
function fill(slots: Slot[], values: Values): unknown[] {
  const params = new Array<unknown>(slots.length);
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i];
    if (slot.kind === "constant") {
      params[i] = slot.value;
      continue;
    }
    if (!(slot.name in values)) throw new Error(`No value for placeholder "${slot.name}" was provided`);
    params[i] = slot.kind === "value" ? values[slot.name] : slot.encoder.mapToDriverValue(values[slot.name]);
  }
  return params;
}

/**
 * Turns statements into text and parameters; a template's text is made once. A
 * dialect may derive values the caller does not give (MySQL's key hashes) from the
 * placeholder's name.
 */
export class StatementCompiler {
  private readonly compiled = new WeakMap<SQL, { sql: string; slots: Slot[]; derived: string[] }>();

  constructor(
    private readonly toQuery: (statement: SQL) => CompiledQuery,
    private readonly derive?: (name: string, values: Values) => unknown,
  ) {}

  compile(statement: Statement): CompiledQuery {
    if (!isBound(statement)) return this.toQuery(statement);
    let query = this.compiled.get(statement.template);
    if (!query) {
      const { sql: text, params } = this.toQuery(statement.template);
      const names = params.flatMap((param) => (is(param, Placeholder) ? [param.name as string] : []));
      // Derived values are named "<placeholder>#<what>".
      const derived = this.derive ? names.filter((name) => name.includes("#")) : [];
      query = { sql: text, slots: params.map(slotOf), derived };
      this.compiled.set(statement.template, query);
    }
    let values = statement.values;
    if (query.derived.length > 0) {
      values = { ...values };
      for (const name of query.derived) values[name] = this.derive?.(name, statement.values);
    }
    return { sql: query.sql, params: fill(query.slots, values) };
  }
}

/**
 * Things built once per key (templates by shape, say); beyond `size` keys the oldest not
 * used since it was last passed over goes (second chance). A hit only sets a flag: moving
 * the entry to the back on every hit cost each statement of a put more than its lookup.
 */
export class LruCache<T> {
  private readonly entries = new Map<string, { value: T; used: boolean }>();

  constructor(private readonly size: number) {}

  get(key: string, build: () => T): T {
    const entry = this.entries.get(key);
    if (entry !== undefined) {
      entry.used = true;
      return entry.value;
    }
    const value = build();
    while (this.entries.size >= this.size) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, { value: T; used: boolean }];
      this.entries.delete(oldestKey);
      if (oldest.used) {
        oldest.used = false;
        this.entries.set(oldestKey, oldest);
      }
    }
    this.entries.set(key, { value, used: false });
    return value;
  }
}

/** The name of a row value's placeholder: `<prefix><row>.<column>`. */
const placeholderName = (prefix: string, row: number, column: number) => `${prefix}${row}.${column}`;

/** Placeholders for `rows` rows of `columns` values, named by {@link placeholderName}. */
export function placeholderRows(prefix: string, rows: number, columns: number): Placeholder[][] {
  return Array.from({ length: rows }, (_, row) =>
    Array.from({ length: columns }, (_, column) => sql.placeholder(placeholderName(prefix, row, column))),
  );
}

/**
 * Placeholder names by prefix, row and column, made once for the first rows of the first
 * prefixes (a put fills dozens per call); the rest, a rare large statement's, are named
 * as they come.
 */
const rowNames = new Map<string, string[][]>();
const NAMED_ROWS = 64;
const NAMED_PREFIXES = 32;

/** The values for {@link placeholderRows} with the same prefix. */
export function rowValues(prefix: string, rows: unknown[][], into: Values = {}): Values {
  let names = rowNames.get(prefix);
  if (!names) {
    names = [];
    if (rowNames.size < NAMED_PREFIXES) rowNames.set(prefix, names);
  }
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    const known = names[r] ?? [];
    if (r < NAMED_ROWS) names[r] = known;
    for (let c = 0; c < row.length; c++) {
      const name = known[c] ?? placeholderName(prefix, r, c);
      known[c] = name;
      into[name] = row[c];
    }
  }
  return into;
}

/** The statements of the saver's frequent calls, by shape, shared by its read and write paths. */
export class Templates {
  private readonly cache = new LruCache<SQL>(500);

  /** A template from `build` with its values: cached when `key` names its shape, else built for this call. */
  statement(key: string | undefined, build: () => SQL, values: Values): Bound {
    return { template: key === undefined ? build() : this.cache.get(key, build), values };
  }
}

/**
 * A statement as plain drizzle SQL with its values in place of the placeholders, for
 * drizzle's public `execute`/`all`/`run` (no compiled text, no private API).
 */
export function filled(statement: Statement, derive?: (name: string, values: Values) => unknown): SQL {
  if (!isBound(statement)) return statement;
  const { values } = statement;
  const fill = (query: SQL): SQL =>
    new SQL(
      query.queryChunks.map((chunk) => {
        if (is(chunk, SQL)) return fill(chunk);
        if (!is(chunk, Placeholder)) return chunk;
        const name = chunk.name as string;
        if (!(name in values) && name.includes("#") && derive) return sql`${derive(name, values)}`;
        if (!(name in values)) throw new Error(`no value for placeholder "${name}"`);
        return sql`${values[name]}`;
      }),
    );
  return fill(statement.template);
}

/**
 * Most parameters the saver binds in one statement. SQLite allows 32766 and
 * PostgreSQL 65535, and the PostgreSQL dialect joins up to 8 statements of a unit
 * into one: 8 x 8000 stays below its limit. Only rare, very large writes and pages
 * reach it; they become several statements of the same atomic unit.
 */
export const MAX_STATEMENT_PARAMETERS = 8000;

/**
 * What one statement may hold on a driver with limits of its own (Cloudflare D1). A writer
 * that keeps within `maxParameters` binds every value, so its text stays short; one that
 * sizes its statements for more (the write path, see rowChunks) keeps the literals the
 * driver writes for the others within `maxStatementBytes`.
 */
export interface StatementLimits {
  /** Bound parameters per statement. */
  maxParameters: number;
  /** Bytes of a statement's text. */
  maxStatementBytes?: number;
}

/** Values longer than this count as bound: such a driver binds the largest values and inlines the rest. */
const LONG_LITERAL = 1000;

/** At most the bytes `value` takes written as an SQL literal (quotes doubled, bytes in hex, text with NUL as hex). */
function literalBytes(value: unknown): number {
  if (typeof value === "string") {
    const bytes = Buffer.byteLength(value);
    return value.includes("\0") ? 2 * bytes + 24 : bytes + value.split("'").length + 1;
  }
  if (value instanceof Uint8Array) return 2 * value.byteLength + 3;
  return 24;
}

/** Text a row adds to a statement besides its literals: placeholders, commas, parentheses. */
const ROW_TEXT_BYTES = 4;

/**
 * Rows in pieces of at most MAX_STATEMENT_PARAMETERS parameters ({@link MAX_STATEMENT_PARAMETERS}).
 * With `limits` naming a statement's text bytes, a piece also keeps to them: at most
 * `maxParameters` long values (which the driver binds) and literals of the others within
 * the text, a tenth of it left for the statement's own SQL.
 */
export function rowChunks<T extends readonly unknown[]>(
  rows: T[],
  parametersPerRow: number,
  limits?: StatementLimits,
): T[][] {
  const perStatement = Math.floor(MAX_STATEMENT_PARAMETERS / parametersPerRow);
  if (limits?.maxStatementBytes === undefined) return inPieces(rows, perStatement);
  const budget = limits.maxStatementBytes * 0.9;
  const pieces: T[][] = [];
  let piece: T[] = [];
  let bytes = 0;
  let long = 0;
  for (const row of rows) {
    let rowBytes = ROW_TEXT_BYTES * row.length;
    let rowLong = 0;
    for (const value of row) {
      const size = literalBytes(value);
      if (size > LONG_LITERAL) rowLong++;
      else rowBytes += size;
    }
    const full = piece.length >= perStatement || bytes + rowBytes > budget || long + rowLong > limits.maxParameters;
    if (piece.length > 0 && full) {
      pieces.push(piece);
      piece = [];
      bytes = 0;
      long = 0;
    }
    piece.push(row);
    bytes += rowBytes;
    long += rowLong;
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces;
}

/** Items in consecutive pieces of at most `size`: none for no items, the array itself when it fits. */
export function inPieces<T>(items: T[], size: number): T[][] {
  if (items.length === 0) return [];
  if (items.length <= size) return [items];
  const pieces: T[][] = [];
  for (let i = 0; i < items.length; i += size) pieces.push(items.slice(i, i + size));
  return pieces;
}
