/** The `index.native` option of `DrizzleStore`: checked, and the native index it asks for (or none). */
import type { VectorIndex } from "../../../dialects/store-vectors.js";
import { describeValue, InvalidInputError, VectorIndexError } from "../../../errors.js";
import { optionKeys, requireKnownNestedOptions } from "../../../known-options.js";

/** Finer settings of `index.native`. */
export interface StoreNativeIndexOptions {
  /** Use the index where the database and driver have it, the exact search elsewhere (default false: required). */
  ifAvailable?: boolean;
  /**
   * A search whose prefix and filter leave fewer items with vectors than this is exact
   * (cheap there, and a global index rarely reaches the items of a small namespace);
   * default 1000. 0 always asks the index first.
   */
  exactBelow?: number;
}

/** `true`: required; `"if-available"`: where the database has one; an object for the finer settings. */
export type StoreNativeIndex = boolean | "if-available" | StoreNativeIndexOptions;

export interface NativeSettings {
  ifAvailable: boolean;
  exactBelow: number;
}

const DEFAULT_EXACT_BELOW = 1000;

const NATIVE_OPTION_KEYS = optionKeys<StoreNativeIndexOptions>({ ifAvailable: true, exactBelow: true });

/** The settings `index.native` asks for, checked (before anything is opened); undefined: the exact search. */
export function nativeSettingsOf(native: StoreNativeIndex | undefined): NativeSettings | undefined {
  if (native === undefined || native === false) return undefined;
  if (native === true) return { ifAvailable: false, exactBelow: DEFAULT_EXACT_BELOW };
  if (native === "if-available") return { ifAvailable: true, exactBelow: DEFAULT_EXACT_BELOW };
  if (typeof native !== "object" || native === null || Array.isArray(native)) {
    throw new InvalidInputError(
      `index.native must be true, false, "if-available" or { ifAvailable, exactBelow }, got ${describeValue(native)}`,
    );
  }
  requireKnownNestedOptions(native as unknown, "index.native", NATIVE_OPTION_KEYS);
  const { ifAvailable = false, exactBelow = DEFAULT_EXACT_BELOW } = native;
  if (typeof ifAvailable !== "boolean") throw new InvalidInputError("index.native.ifAvailable must be a boolean");
  if (!Number.isSafeInteger(exactBelow) || exactBelow < 0) {
    throw new InvalidInputError(`index.native.exactBelow must be a non-negative integer, got ${String(exactBelow)}`);
  }
  return { ifAvailable, exactBelow };
}

/**
 * The settings and index of `index.native`, or undefined for the exact search. A required
 * index the database or driver cannot have is a `VectorIndexError` here, at construction.
 */
export function nativeIndexOf(
  native: StoreNativeIndex | undefined,
  index: () => VectorIndex | VectorIndexError,
): { settings: NativeSettings; index: VectorIndex } | undefined {
  const settings = nativeSettingsOf(native);
  if (!settings) return undefined;
  const found = index();
  if (found instanceof VectorIndexError) {
    if (settings.ifAvailable) return undefined;
    throw found;
  }
  return { settings, index: found };
}
