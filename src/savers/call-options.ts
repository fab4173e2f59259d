/** The check every call with an options object shares: only keys it knows. */
import { InvalidInputError } from "../errors.js";

/**
 * A call's options: an object of known keys. A misspelt or unsupported one (`keeplast`, or
 * `keepLast` given to expireThreads) would otherwise be dropped, and more removed than asked.
 */
export function requireKnownOptions(
  options: unknown,
  call: string,
  known: readonly string[],
): asserts options is Record<string, unknown> {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new InvalidInputError(`${call}: options must be an object`);
  }
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown !== undefined) throw new InvalidInputError(`${call}: unknown option "${unknown}"`);
}
