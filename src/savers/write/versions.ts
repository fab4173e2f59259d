/**
 * Channel versions: the next version a `put` gives a channel, and how integer versions
 * written by other savers are read and stored beside ours.
 */
import { randomInt } from "node:crypto";
import type { Checkpoint } from "@langchain/langgraph-checkpoint";

/**
 * Channel versions are "<counter, 32 digits>.<random, 16 digits>": zero-padded so
 * text order is version order, random so a branch forked by time travel never
 * reuses a version (and so a stored blob) of the branch it was forked from.
 *
 * A thread written with numbers (LangGraph's default, other savers) keeps numbers:
 * LangGraph compares a number with a string as text, where 2 sorts above "000…13",
 * and would then number a channel backwards. Its next version is the next integer
 * plus a random fraction, for the same reason as the suffix; at most 15 significant
 * digits, so every database's JSON prints it back as JavaScript does.
 */
export function nextChannelVersion(current: string | number | undefined): string | number {
  if (typeof current === "number" && Number.isFinite(current) && current >= 0) {
    const counter = String(Math.floor(current) + 1);
    const digits = Math.max(1, Math.min(12, 15 - counter.length));
    const fraction = String(randomInt(1, 10 ** digits)).padStart(digits, "0");
    return Number(`${counter}.${fraction}`);
  }
  let counter = 0;
  if (typeof current === "string") counter = Number.parseInt(current.split(".")[0] ?? "0", 10) || 0;
  const random = `${randomInt(1e8)}`.padStart(8, "0") + `${randomInt(1e8)}`.padStart(8, "0");
  return `${String(counter + 1).padStart(32, "0")}.${random}`;
}

/**
 * Suffix of an integer version read in our format. Not digits: no version we make,
 * nor one the transfer module imports (zero or digest suffixes), can look like it.
 */
const INTEGER_SUFFIX = ".integer";
const INTEGER_VERSION = /^\d{1,31}$/;
const READ_INTEGER_VERSION = /^(\d{32})\.integer$/;

const isInteger = (version: unknown) =>
  (typeof version === "number" && Number.isSafeInteger(version) && version >= 0) ||
  // The length first: on our 49-character versions the pattern backtracked 31 times.
  (typeof version === "string" && version.length <= 31 && INTEGER_VERSION.test(version));

/** Whether a checkpoint's versions hold both integers and our strings: one pass, no copies (every read asks). */
function mixesIntegersWithStrings(checkpoint: Checkpoint): boolean {
  let integers = false;
  let strings = false;
  const look = (versions: Record<string, unknown> | undefined) => {
    for (const channel in versions) {
      const version = versions[channel];
      if (isInteger(version)) integers = true;
      else if (typeof version === "string") strings = true;
    }
    return integers && strings;
  };
  if (look(checkpoint.channel_versions)) return true;
  for (const node in checkpoint.versions_seen) if (look(checkpoint.versions_seen[node])) return true;
  return false;
}

/**
 * A checkpoint whose versions mix integers with our strings (a thread written by
 * other savers, then by an earlier release of this one) is read with the integers in
 * our format, so LangGraph orders them right. Other checkpoints are returned as stored.
 */
export function readCheckpointVersions(checkpoint: Checkpoint): Checkpoint {
  if (!mixesIntegersWithStrings(checkpoint)) return checkpoint;
  const read = <T extends Record<string, unknown>>(versions: T): T =>
    Object.fromEntries(
      Object.entries(versions ?? {}).map(([channel, v]) => [
        channel,
        isInteger(v) ? `${String(v).padStart(32, "0")}${INTEGER_SUFFIX}` : v,
      ]),
    ) as T;
  return {
    ...checkpoint,
    channel_versions: read(checkpoint.channel_versions),
    versions_seen: Object.fromEntries(
      Object.entries(checkpoint.versions_seen ?? {}).map(([node, versions]) => [node, read(versions)]),
    ),
  };
}

/** The key a version read by {@link readCheckpointVersions} is stored under: the integer it was. */
export function storedVersion(version: unknown): unknown {
  const match = typeof version === "string" ? READ_INTEGER_VERSION.exec(version) : null;
  return match ? Number(match[1]) : version;
}

/** Channel versions as stored ({@link storedVersion}). */
export function storedVersions<T extends Record<string, unknown>>(versions: T): T {
  return Object.fromEntries(Object.entries(versions).map(([channel, v]) => [channel, storedVersion(v)])) as T;
}
