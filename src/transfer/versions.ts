/**
 * The official savers keep LangGraph's integer channel versions (1, 2, 3, ...); ours are
 * strings compared as text (src/savers/write/versions.ts). An imported integer n becomes
 * "<n, 32 digits>.<suffix, 16 digits>" (the 0.1.0 form, which the thread then keeps), so
 * the order of versions is kept, also between `channel_versions` and `versions_seen`.
 * The suffix tells apart two values that the official SQLite saver stores under one
 * integer in two branches of a thread (a time-travel fork counts on from the same
 * number): it is derived from the value.
 */
import { createHash } from "node:crypto";
import { InvalidInputError } from "../errors.js";
import { isOurVersion } from "../savers/write/versions.js";

export const ZERO_SUFFIX = "0".repeat(16);

/** A 16-digit suffix determined by a serialized value (the same value always gets the same one). */
export function valueSuffix(type: string, bytes: Uint8Array | null): string {
  const digest = createHash("sha256")
    .update(type)
    .update("\u0000")
    .update(bytes ?? new Uint8Array())
    .digest();
  return (digest.readBigUInt64BE(0) % 10_000_000_000_000_000n).toString().padStart(16, "0");
}

/** Our form of a version; versions already in our form are kept. */
export function toOurVersion(version: unknown, suffix: string, where: string): string {
  if (isOurVersion(version)) return version;
  const counter = typeof version === "string" && /^\d+$/.test(version) ? Number(version) : version;
  if (typeof counter !== "number" || !Number.isSafeInteger(counter) || counter < 0) {
    throw new InvalidInputError(`${where}: channel version ${JSON.stringify(version)} is not an integer`);
  }
  return `${String(counter).padStart(32, "0")}.${suffix}`;
}

export interface OfficialCheckpoint {
  channel_versions?: Record<string, unknown>;
  versions_seen?: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
}

/**
 * The checkpoint with our versions. `suffixOf(channel)` gives the suffix of the
 * channel's current version; a version in `versions_seen` equal to the channel's
 * current one becomes the very same text (LangGraph compares them to decide what runs).
 */
export function convertVersions(
  checkpoint: OfficialCheckpoint,
  suffixOf: (channel: string) => string,
  where: string,
): { checkpoint: OfficialCheckpoint; channelVersions: Record<string, string> } {
  const original = checkpoint.channel_versions ?? {};
  const channelVersions: Record<string, string> = {};
  for (const [channel, version] of Object.entries(original)) {
    channelVersions[channel] = toOurVersion(version, suffixOf(channel), where);
  }
  const versionsSeen: Record<string, Record<string, string>> = {};
  for (const [node, seen] of Object.entries(checkpoint.versions_seen ?? {})) {
    versionsSeen[node] = {};
    for (const [channel, version] of Object.entries(seen ?? {})) {
      versionsSeen[node][channel] =
        version === original[channel] && channel in channelVersions
          ? channelVersions[channel]
          : toOurVersion(version, ZERO_SUFFIX, where);
    }
  }
  return {
    checkpoint: { ...checkpoint, channel_versions: channelVersions, versions_seen: versionsSeen },
    channelVersions,
  };
}
