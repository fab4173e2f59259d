/**
 * Encryption at rest for the saver's rows: the place (associated data) of a channel value
 * and of a pending write, and sealing or opening their type and bytes with the saver's
 * Sealer (serde/sealing.ts). Without encryption every call passes the row through.
 */
import type { Row } from "../../dialects/dialect.js";
import { DecryptionError } from "../../errors.js";
import { isSealedType, type Place, type Sealer } from "../../serde/sealing.js";
import type { CheckpointKey } from "./values.js";

/** A channel value's place: thread, namespace, channel, version, and its delta chain (so the chain cannot be swapped). */
export function blobPlace(threadId: string, ns: string, channel: string, version: string, chain: string | null): Place {
  return ["blob", threadId, ns, channel, version, chain ?? ""];
}

/** A pending write's place: thread, namespace, checkpoint, task, index and channel. */
export function writePlace(
  threadId: string,
  ns: string,
  checkpointId: string,
  taskId: string,
  idx: number,
  channel: string,
): Place {
  return ["write", threadId, ns, checkpointId, taskId, String(idx), channel];
}

/** The delta_chain column as text (MySQL returns its bytes), or null. */
export function chainText(column: unknown): string | null {
  if (column === null || column === undefined) return null;
  return typeof column === "string" ? column : Buffer.from(column as Uint8Array).toString("utf8");
}

/** Seals what the saver stores and opens what it reads, when encryption is on. */
export class ValueSealing {
  constructor(readonly sealer: Sealer | undefined) {}

  /** The stored type and bytes of a value of serializer type `type` at `place` (`remember`: see Sealer.seal). */
  seal(type: string, bytes: Uint8Array, place: Place, remember = false): [string, Uint8Array] {
    return this.sealer ? this.sealer.seal(type, bytes, place, remember) : [type, bytes];
  }

  /**
   * A blob row (thread_id, checkpoint_ns, channel, version, delta_chain, type, data) with
   * its type and data opened. An "empty" marker holds no value and is never sealed.
   */
  openBlob(row: Row, checkpointId: string | undefined): Row {
    if (row.type === "empty" || !this.needsOpening(row)) return row;
    const threadId = row.thread_id as string;
    const ns = row.checkpoint_ns as string;
    const place = blobPlace(threadId, ns, row.channel as string, String(row.version), chainText(row.delta_chain));
    const where = () => {
      const at = checkpointId === undefined ? "" : `, checkpoint ${JSON.stringify(checkpointId)}`;
      return `the value of channel ${JSON.stringify(row.channel)} (version ${JSON.stringify(String(row.version))}) of thread ${JSON.stringify(threadId)}, namespace ${JSON.stringify(ns)}${at}`;
    };
    const [type, data] = (this.sealer as Sealer).open(String(row.type), row.data as Uint8Array, place, where);
    return { ...row, type, data };
  }

  /** A write row (task_id, idx, channel, type, data) of checkpoint `key` with its type and data opened. */
  openWrite(row: Row, key: { threadId: string; ns: string; checkpointId: string }): Row {
    if (!this.needsOpening(row)) return row;
    const { threadId, ns, checkpointId } = key;
    const place = writePlace(threadId, ns, checkpointId, row.task_id as string, Number(row.idx), row.channel as string);
    const where = () =>
      `the pending write of task ${JSON.stringify(row.task_id)} to channel ${JSON.stringify(row.channel)} of thread ${JSON.stringify(threadId)}, namespace ${JSON.stringify(ns)}, checkpoint ${JSON.stringify(checkpointId)}`;
    const [type, data] = (this.sealer as Sealer).open(String(row.type), row.data as Uint8Array, place, where);
    return { ...row, type, data };
  }

  /**
   * With encryption on, a checkpoint row read for namespace `asked` must name that
   * namespace. MySQL keys a hash of it: a checkpoint row moved to another namespace by
   * changing only its hash would bring the values of its own namespace, which open there.
   */
  requireNamespace(key: CheckpointKey, asked: string | undefined): void {
    if (!this.sealer || asked === undefined || key.ns === asked) return;
    throw new DecryptionError(
      `checkpoint ${JSON.stringify(key.checkpointId)} of thread ${JSON.stringify(key.threadId)} was read for namespace ${JSON.stringify(asked)} but names namespace ${JSON.stringify(key.ns)}: it was moved there by SQL; refusing it`,
    );
  }

  /**
   * Pending write rows opened (see openWrite; `keyOf` gives each row's checkpoint), refusing
   * two at the same place: a place holds one write, so another is a copy. MySQL keys a hash
   * of the task id: a write copied under another task's hash keeps its own task id and opens.
   */
  openWrites(rows: Row[], keyOf: (row: Row) => CheckpointKey): Row[] {
    const seen = new Set<string>();
    return rows.map((row) => {
      const key = keyOf(row);
      const opened = this.openWrite(row, key);
      if (!this.sealer) return opened;
      const place = `${key.checkpointId}\0${row.task_id}\0${Number(row.idx)}`; // ids hold no NUL
      if (seen.has(place)) {
        throw new DecryptionError(
          `the pending write ${Number(row.idx)} of task ${JSON.stringify(row.task_id)} of thread ${JSON.stringify(key.threadId)}, namespace ${JSON.stringify(key.ns)}, checkpoint ${JSON.stringify(key.checkpointId)} is stored twice: one is a copy made by SQL; refusing them`,
        );
      }
      seen.add(place);
      return opened;
    });
  }

  /** With encryption on, every row; without it, a sealed row is an error, not bytes handed to the serializer. */
  private needsOpening(row: Row): boolean {
    if (this.sealer) return true;
    if (typeof row.type === "string" && isSealedType(row.type)) {
      throw new DecryptionError(
        `a stored value is sealed (type "${row.type}") and this saver has no encryption option; give it the keys`,
      );
    }
    return false;
  }
}
