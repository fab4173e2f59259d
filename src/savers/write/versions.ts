/**
 * Channel versions: the next version a `put` gives a channel, and how integer versions
 * written by other savers are read and stored beside ours.
 */
import { randomInt } from "node:crypto";
import type { Checkpoint } from "@langchain/langgraph-checkpoint";

/**
 * Channel versions are "<class><counter>.<random, 14 digits>", digits only:
 * - class "1": an 8-digit counter (24 characters in all); class "2": a 16-digit counter,
 *   from 100,000,000 on. Zero-padded within a class and the class first, so text order
 *   is version order, under `<` and `localeCompare` in every locale (digits collate in
 *   their own order everywhere; letters do not: "ch" is one letter in Czech).
 * - random, so a branch forked by time travel never reuses a version (and so a stored
 *   blob) of the branch it was forked from.
 *
 * The 0.1.0 form, "<counter, 32 digits>.<random, 16 digits>", starts with "0" and sorts
 * below every version of the current form. A thread in that form stays in it (its next
 * version is the next 32-digit one), so threads stored before an upgrade are numbered
 * as an earlier release numbers them; new threads get the short form, which a version
 * appears in about 20 times per checkpoint (keys, indexes, the checkpoint itself).
 *
 * A thread written with numbers (LangGraph's default, other savers) keeps numbers:
 * LangGraph compares a number with a string as text, where 2 sorts above "1000…13",
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
  const { counter, longForm } = typeof current === "string" ? parseVersion(current) : { counter: 0, longForm: false };
  return longForm ? longVersion(counter + 1) : shortVersion(counter + 1);
}

/** Counters below this take class "1" (8 digits); the others class "2" (16, enough for every safe integer). */
const CLASS_1_LIMIT = 10 ** 8;
const RANDOM_DIGITS = 14;
const RANDOM_RANGE = 10 ** RANDOM_DIGITS; // below randomInt's limit, 2^48
/** The current form: its class and counter, then the random part. */
const SHORT_VERSION = /^(?:1(\d{8})|2(\d{16}))\.\d+$/;

function shortVersion(counter: number): string {
  const random = String(randomInt(RANDOM_RANGE)).padStart(RANDOM_DIGITS, "0");
  return counter < CLASS_1_LIMIT
    ? `1${String(counter).padStart(8, "0")}.${random}`
    : `2${String(counter).padStart(16, "0")}.${random}`;
}

/** The 0.1.0 form. */
function longVersion(counter: number): string {
  const random = `${randomInt(1e8)}`.padStart(8, "0") + `${randomInt(1e8)}`.padStart(8, "0");
  return `${String(counter).padStart(32, "0")}.${random}`;
}

/**
 * The counter of a string version, and whether its thread goes on in the 0.1.0 form: a
 * version in that form, or text this module does not make, is read as that release
 * read it (the leading digits before the first ".", else 0).
 */
function parseVersion(version: string): { counter: number; longForm: boolean } {
  const short = SHORT_VERSION.exec(version);
  if (short) return { counter: Number(short[1] ?? short[2]), longForm: false };
  return { counter: Number.parseInt(version.split(".")[0] ?? "0", 10) || 0, longForm: true };
}

/** Whether `version` is a string version this saver makes, in the current or the 0.1.0 form. */
export function isOurVersion(version: unknown): version is string {
  return typeof version === "string" && (SHORT_VERSION.test(version) || /^\d{32}\.\d{16}$/.test(version));
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
  // The length first: on the 0.1.0 form's 49-character versions the pattern backtracked 31 times.
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

/**
 * Whether a version can name its value: a value's row is found through its version's text
 * in the checkpoint's JSON copy of channel_versions, so a number must print there as
 * JavaScript prints it. NaN and Infinity become null, and PostgreSQL writes 1e21 or 1e-7
 * out in full (its values would be stored and never read). LangGraph's and our versions
 * never take these forms.
 */
export function isStorableVersion(version: unknown): version is string | number {
  if (typeof version === "string") return true;
  return typeof version === "number" && Number.isFinite(version) && !String(version).includes("e");
}
