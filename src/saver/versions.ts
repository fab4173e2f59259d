import { randomInt } from "node:crypto";

/**
 * Channel versions are "<counter, 32 digits>.<random, 16 digits>": zero-padded so
 * text order is version order, random so a branch forked by time travel never
 * reuses a version (and so a stored blob) of the branch it was forked from.
 */
export function nextChannelVersion(current: string | number | undefined): string {
  let counter = 0;
  if (typeof current === "number") counter = current;
  else if (typeof current === "string") counter = Number.parseInt(current.split(".")[0] ?? "0", 10) || 0;
  const random = `${randomInt(1e8)}`.padStart(8, "0") + `${randomInt(1e8)}`.padStart(8, "0");
  return `${String(counter + 1).padStart(32, "0")}.${random}`;
}

/** Suffix of an integer version read back in our format; a random suffix is all zeros once in 10^16. */
const INTEGER_SUFFIX = ".0000000000000000";
const INTEGER_VERSION = /^\d{1,31}$/;
const READ_INTEGER_VERSION = /^(\d{32})\.0{16}$/;

/**
 * Other savers (and LangGraph's default) number versions 1, 2, 3. LangGraph compares
 * versions as text, where "2" sorts above our "000…13": read back, an integer
 * becomes the version of our format with that counter, so the order is right again.
 */
export function readVersion(version: unknown): unknown {
  if (typeof version === "number" && Number.isSafeInteger(version) && version >= 0) {
    return `${String(version).padStart(32, "0")}${INTEGER_SUFFIX}`;
  }
  if (typeof version === "string" && INTEGER_VERSION.test(version))
    return `${version.padStart(32, "0")}${INTEGER_SUFFIX}`;
  return version;
}

/** The inverse of {@link readVersion}: the key its channel value is stored under. */
export function storedVersion(version: unknown): unknown {
  const match = typeof version === "string" ? READ_INTEGER_VERSION.exec(version) : null;
  return match ? Number(match[1]) : version;
}

/** Versions of a checkpoint as read ({@link readVersion}), for channel_versions and each versions_seen entry. */
export function readVersions<T extends Record<string, unknown>>(versions: T | undefined): T | undefined {
  if (versions === undefined || versions === null) return versions;
  return Object.fromEntries(Object.entries(versions).map(([channel, v]) => [channel, readVersion(v)])) as T;
}

/** Channel versions as stored ({@link storedVersion}). */
export function storedVersions<T extends Record<string, unknown>>(versions: T): T {
  return Object.fromEntries(Object.entries(versions).map(([channel, v]) => [channel, storedVersion(v)])) as T;
}
