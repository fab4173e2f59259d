/**
 * Canonical form of everything a graph run lets an application observe (state
 * snapshots with their configs, metadata, tasks and interrupts; stream chunks; errors),
 * for comparing a run on the DrizzleSaver with the same run on MemorySaver field by
 * field. Ids differ between two runs (checkpoint ids are time-based, task and
 * interrupt ids hash them), so each distinct id is renamed by its order of first
 * appearance: the two runs must agree on which ids are equal, not on their text.
 * Timestamps are checked for order separately (checkOrder) and then blanked.
 */

import { createHash } from "node:crypto";
import { isBaseMessage } from "@langchain/core/messages";
import type { StateSnapshot, StreamMode } from "@langchain/langgraph";
import { expect } from "vitest";

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
// Interrupt ids: an XXH3 hash in hex.
const HASH = /^[0-9a-f]{32}$/i;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

/** Every stream mode whose chunks a saver can influence. */
export const STREAM_MODES: StreamMode[] = ["updates", "values", "checkpoints", "tasks"];

/** Renames ids consistently within one run. */
class IdNames {
  private readonly names = new Map<string, string>();

  /** `fixed` names texts that are not ids but differ between the runs (thread ids). */
  constructor(fixed: Record<string, string> = {}) {
    for (const [text, name] of Object.entries(fixed)) this.names.set(text, name);
  }

  fixed(text: string): string | undefined {
    const named = this.names.get(text);
    return named?.startsWith("<id") ? undefined : named;
  }

  name(id: string): string {
    let named = this.names.get(id);
    if (named === undefined) {
      named = `<id${this.names.size}>`;
      this.names.set(id, named);
    }
    return named;
  }
}

function canonString(text: string, ids: IdNames): string {
  // A long text compares by length and digest, so a difference prints short.
  if (text.length > 10_000)
    return `<${text.length} chars ${createHash("sha256").update(text).digest("hex").slice(0, 16)}>`;
  const fixed = ids.fixed(text);
  if (fixed !== undefined) return fixed;
  if (ISO_TIME.test(text)) return "<time>";
  if (HASH.test(text)) return ids.name(text.toLowerCase());
  return text.replace(UUID, (id) => ids.name(id.toLowerCase()));
}

/**
 * Plain data with ids renamed: messages keep their type, content, name, id and tool
 * data; errors keep name and message; class instances (Command, Send, Interrupt)
 * keep their own fields and their class name.
 */
function canon(value: unknown, ids: IdNames, path: object[] = []): unknown {
  if (typeof value === "string") return canonString(value, ids);
  if (value === null || typeof value !== "object") return value;
  if (path.includes(value))
    throw new Error(`cyclic value at depth ${path.length}: ${path.map((o) => o.constructor?.name).join(" > ")}`);
  const inner = [...path, value];
  if (isBaseMessage(value)) {
    return canon(
      {
        type: value.getType(),
        content: value.content,
        id: value.id,
        name: value.name,
        tool_calls: "tool_calls" in value ? value.tool_calls : undefined,
        tool_call_id: "tool_call_id" in value ? value.tool_call_id : undefined,
      },
      ids,
      inner,
    );
  }
  if (value instanceof Error) return { error: value.name, message: canonString(value.message, ids) };
  if (Array.isArray(value)) return value.map((item) => canon(item, ids, inner));
  if (value instanceof Map) return canon(Object.fromEntries(value), ids, inner);
  const out: Record<string, unknown> = {};
  const kind = value.constructor?.name;
  if (kind !== undefined && kind !== "Object") out["<class>"] = kind;
  for (const key of Object.keys(value).sort()) {
    const field = (value as Record<string, unknown>)[key];
    if (field === undefined || typeof field === "function") continue;
    // LangGraph's own run internals (the checkpointer, the scratchpad) leak into some
    // configs it streams; only their presence is comparable.
    if (key.startsWith("__pregel_")) {
      out[key] = "<internal>";
      continue;
    }
    try {
      out[canonString(key, ids)] = canon(field, ids, inner);
    } catch (error) {
      throw new Error(`${key}.${(error as Error).message}`);
    }
  }
  return out;
}

/**
 * Canonical form of a whole run's observations, ids named in one sequence, in the
 * order of `observed`'s keys (put deterministic observations first).
 */
export function canonRun(observed: Record<string, unknown>, threads: Record<string, string>): Record<string, unknown> {
  const ids = new IdNames(threads);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(observed)) out[key] = canon(value, ids);
  return out;
}

function checkpointId(config: StateSnapshot["config"] | undefined): string | undefined {
  const id = config?.configurable?.checkpoint_id;
  return typeof id === "string" ? id : undefined;
}

/**
 * What canon blanks: a history runs newest first (checkpoint ids and creation times
 * falling), and each snapshot's parent is an older snapshot of the same history.
 */
export function checkOrder(snapshots: StateSnapshot[], complete = true): void {
  const ids = snapshots.map((s) => checkpointId(s.config) ?? "");
  expect([...ids].sort().reverse()).toEqual(ids);
  const times = snapshots.map((s) => Date.parse(s.createdAt ?? ""));
  for (const time of times) expect(Number.isFinite(time)).toBe(true);
  for (let i = 1; i < times.length; i += 1) expect(times[i]).toBeLessThanOrEqual(times[i - 1]);
  snapshots.forEach((snapshot, i) => {
    const parent = checkpointId(snapshot.parentConfig);
    if (parent !== undefined && (complete || ids.includes(parent))) expect(ids.indexOf(parent)).toBeGreaterThan(i);
  });
}

/** Collects every chunk of a stream. */
export async function collect<T>(stream: AsyncIterable<T> | Promise<AsyncIterable<T>>): Promise<T[]> {
  const chunks: T[] = [];
  for await (const chunk of await stream) chunks.push(chunk);
  return chunks;
}

/** Every snapshot of a history (newest first), checked for order. */
export async function orderedHistory(
  graph: { getStateHistory(config: StateSnapshot["config"], options?: object): AsyncIterableIterator<StateSnapshot> },
  config: StateSnapshot["config"],
  options?: object,
): Promise<StateSnapshot[]> {
  const snapshots = await collect(graph.getStateHistory(config, options));
  checkOrder(snapshots, options === undefined);
  return snapshots;
}

/** Interrupts that parallel tasks raised, in a fixed order (they arrive in the order the tasks stopped). */
function sortInterrupts(chunk: unknown): unknown {
  const [ns, mode, payload] = chunk as [string[], string, Record<string, unknown>];
  const raised = payload?.__interrupt__;
  if (mode !== "updates" || !Array.isArray(raised)) return chunk;
  const sorted = [...raised].sort((a, b) => JSON.stringify(a.value).localeCompare(JSON.stringify(b.value)));
  return [ns, mode, { ...payload, __interrupt__: sorted }];
}

/** Stream chunks grouped by the node names of their namespace: parallel subgraphs interleave by timing. */
export function byNamespace(chunks: unknown[]): Record<string, unknown[]> {
  const groups: Record<string, unknown[]> = {};
  for (const part of chunks) {
    // Without subgraphs: true a chunk has no namespace: it is the root's.
    const raw = Array.isArray(part) && part.length === 2 ? [[], ...part] : part;
    const chunk = sortInterrupts(raw);
    const [ns, mode, payload] = chunk as [string[], string, Record<string, unknown>];
    // Parallel tasks end in either order too: their update and task events go apart.
    const raised = Array.isArray(payload?.__interrupt__)
      ? JSON.stringify(payload.__interrupt__.map((i) => i.value))
      : "";
    const task = mode === "tasks" ? payload.name : mode === "updates" ? Object.keys(payload).join() + raised : raised;
    const key = `${ns.map((part) => part.split(":")[0]).join("/") || "(root)"} ${task}`;
    groups[key] ??= [];
    groups[key].push(chunk);
  }
  return groups;
}
