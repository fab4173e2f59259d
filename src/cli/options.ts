/** Parsers for option values; each throws commander's InvalidArgumentError (exit code 2). */
import { InvalidArgumentError } from "commander";
import { parseDuration } from "../duration.js";

/** A metadata filter built from repeated `key=value` arguments. */
export type Filter = Record<string, unknown>;

/**
 * Adds one `key=value` to a filter. The value is JSON when it parses as JSON
 * (`step=3` is the number 3, `step='"3"'` the string "3", `tags=["a"]` an array)
 * and the plain string otherwise (`source=loop`).
 */
export function parseFilter(argument: string, previous: Filter | undefined): Filter {
  const at = argument.indexOf("=");
  if (at < 0) throw new InvalidArgumentError(`expected key=value, got "${argument}" (no "=")`);
  const key = argument.slice(0, at);
  if (key.length === 0) throw new InvalidArgumentError(`expected key=value, got "${argument}" (empty key)`);
  if (previous !== undefined && Object.hasOwn(previous, key)) {
    throw new InvalidArgumentError(`the filter key "${key}" is given twice`);
  }
  // Keys are defined, never assigned: `filter["__proto__"] = v` would set the prototype
  // and drop the key (a filter that then matches every thread).
  const filter: Filter = {};
  for (const [name, value] of Object.entries(previous ?? {})) defineKey(filter, name, value);
  defineKey(filter, key, parseFilterValue(argument.slice(at + 1)));
  return filter;
}

function defineKey(target: Filter, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function parseFilterValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function parseCount(argument: string): number {
  if (!/^\d+$/.test(argument.trim())) throw new InvalidArgumentError("expected a non-negative integer");
  const value = Number(argument.trim());
  if (!Number.isSafeInteger(value)) throw new InvalidArgumentError("the number is too large");
  return value;
}

export function parsePositive(argument: string): number {
  const value = parseCount(argument);
  if (value < 1) throw new InvalidArgumentError("expected a positive integer");
  return value;
}

/** Binary multiples a size may end with (`--max-line-bytes 64MiB`). */
const SIZE_UNITS: Record<string, number> = {
  "": 1,
  k: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
};

/** A size in bytes: an integer, optionally with a unit (`512KiB`, `64MiB`, `1G`: binary multiples). */
export function parseSize(argument: string): number {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(argument.trim());
  const unit = match ? SIZE_UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined)
    throw new InvalidArgumentError('expected a size such as "1048576", "512KiB" or "64MiB"');
  const value = Number(match[1]) * unit;
  if (!Number.isSafeInteger(value) || value < 1) throw new InvalidArgumentError("expected a positive size");
  return value;
}

/** A point in time: an ISO 8601 date (`2025-01-31`, `2025-01-31T12:00:00Z`; UTC without a zone) or a duration ago (`30d`). */
export function parseInstant(argument: string, now: () => number = Date.now): Date {
  const duration = parseDuration(argument);
  if (duration !== undefined) return new Date(now() - duration);
  const text = argument.trim();
  const iso = /^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i.exec(text);
  if (iso) {
    // JavaScript reads a bare date as UTC but a date-time without a zone as local time;
    // both are UTC here, so the cut-off never depends on the machine's time zone.
    const withTime = text.length > 10;
    const date = new Date(withTime && iso[1] === undefined ? `${text.replace(" ", "T")}Z` : text);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw new InvalidArgumentError(
    'expected an ISO date (2025-01-31, 2025-01-31T12:00:00Z) or a duration ("30d", "12h")',
  );
}

export const PRUNE_STRATEGIES = ["keep_latest", "delete"] as const;
export type Strategy = (typeof PRUNE_STRATEGIES)[number];
