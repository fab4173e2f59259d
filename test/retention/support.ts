import { join } from "node:path";
import type { DialectName } from "../helpers/databases.js";
import { hoursAgo, type RawDatabase, setCreatedAt } from "../lifecycle/support.js";
import type { ChainSpec } from "../reliability/chain.js";
import { type Child, startChild } from "../reliability/helpers.js";
import type { SweeperArgs } from "./workers/sweeper.js";

/**
 * Makes threads look idle for `hours`: their checkpoints' created_at and their
 * per-thread row (what sweeps read) both move into the past.
 */
export async function ageThreads(raw: RawDatabase, threadIds: readonly string[], hours: number): Promise<void> {
  await setCreatedAt(raw, threadIds, hoursAgo(raw.dialect as DialectName, hours));
}

/** Thread ids that have a row in checkpoint_threads, sorted. */
export async function threadRows(raw: RawDatabase): Promise<string[]> {
  const rows = await raw.query("select thread_id from checkpoint_threads");
  return rows.map((row) => String(row.thread_id)).sort();
}

/** Checkpoints per namespace of one thread, oldest first. */
export async function checkpointIds(raw: RawDatabase, threadId: string): Promise<Map<string, string[]>> {
  const rows = await raw.query(
    "select checkpoint_ns, checkpoint_id from checkpoints where thread_id = ? order by checkpoint_id",
    [threadId],
  );
  const byNs = new Map<string, string[]>();
  for (const row of rows) {
    const ns = String(row.checkpoint_ns);
    byNs.set(ns, [...(byNs.get(ns) ?? []), String(row.checkpoint_id)]);
  }
  return byNs;
}

/** The race tests' threads: `count` of each kind, named "<kind>-<i>", three small channels each. */
export function chainSpecs(counts: Record<string, number>): ChainSpec[] {
  return Object.entries(counts).flatMap(([kind, count]) =>
    Array.from({ length: count }, (_, i) => ({
      threadId: `${kind}-${i}`,
      ns: "",
      channels: 3,
      size: 256,
      label: `${kind}${i}`,
    })),
  );
}

/** `count` sweeper processes (workers/sweeper.ts), labelled s0, s1, ..., with the same arguments. */
export function startSweepers(count: number, args: Omit<SweeperArgs, "label">): Child[] {
  return Array.from({ length: count }, (_, i) =>
    startChild(join("test/retention/workers", "sweeper.ts"), { ...args, label: `s${i}` } satisfies SweeperArgs),
  );
}
