/**
 * The one rule for options objects, of calls, of constructors and of the objects nested in
 * them (encryption, retention, ttl, index): known keys only. A misspelt key would otherwise
 * be dropped without a word: `encyption` stored conversations in the clear, `keeplast`
 * removed more than asked.
 */
import { describeValue, InvalidInputError } from "./errors.js";

/**
 * Every key of an options interface, each `true`: written beside the interface as
 * `optionKeys<X>({ ... })`, so a key added to the interface and not to the list (or the
 * other way round) fails tsc.
 */
type OptionKeys<T> = { readonly [K in keyof T]-?: true };

/** The keys of an options interface, listed once beside it (see {@link OptionKeys}). */
export function optionKeys<T>(keys: OptionKeys<T>): readonly string[] {
  return Object.keys(keys);
}

function isOptionsObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function rejectUnknownKeys(options: Record<string, unknown>, owner: string, known: readonly string[]): void {
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown !== undefined) throw new InvalidInputError(`${owner}: unknown option "${unknown}"`);
}

/** A call's or constructor's options (`call` names it): an object of known keys. */
export function requireKnownOptions(
  options: unknown,
  call: string,
  known: readonly string[],
): asserts options is Record<string, unknown> {
  if (!isOptionsObject(options)) throw new InvalidInputError(`${call}: options must be an object`);
  rejectUnknownKeys(options, call, known);
}

/** An option whose value is an object of options of its own (`name`: its path, "index.native"): known keys only. */
export function requireKnownNestedOptions(
  value: unknown,
  name: string,
  known: readonly string[],
): asserts value is Record<string, unknown> {
  if (!isOptionsObject(value)) throw new InvalidInputError(`${name} must be an object, got ${describeValue(value)}`);
  rejectUnknownKeys(value, name, known);
}
