/**
 * The check of the table functions' options (`checkpointTables` and `storeTables` of each
 * family): known keys, each a string. A misspelt `prefx` would otherwise give the default
 * names without a word, and the application would migrate and use other tables than it meant.
 */
import { describeValue, InvalidInputError } from "../errors.js";
import { requireKnownOptions } from "../known-options.js";

export function checkTableOptions(options: unknown, call: string, known: readonly string[]): void {
  requireKnownOptions(options, call, known);
  for (const key of known) {
    const value = options[key];
    if (value !== undefined && typeof value !== "string") {
      throw new InvalidInputError(`${call}: ${key} must be a string, got ${describeValue(value)}`);
    }
  }
}
