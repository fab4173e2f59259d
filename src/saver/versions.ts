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
