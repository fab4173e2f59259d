/**
 * What both official savers' sources share: their serializer (from the optional official package) and the
 * conversion of their rows.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { InvalidInputError, MissingPackageError, SerializationError } from "../../errors.js";
import type { CheckpointRecord, WriteRecord } from "../records.js";
import { convertVersions, type OfficialCheckpoint } from "../versions.js";

/** A saver class whose constructor only stores its connection (true of both official savers). */
type SaverClass = new (connection: never) => { serde: SerializerProtocol };

/**
 * The serializer an official saver reads its values with, taken from the saver itself
 * so the import reads exactly what that saver would. The packages are optional: they
 * are imported only when their data is read, with a message saying what to install.
 */
export async function officialSerde(pkg: "postgres" | "sqlite"): Promise<SerializerProtocol> {
  const name = `@langchain/langgraph-checkpoint-${pkg}`;
  let saverClass: SaverClass;
  try {
    const module = (await import(name)) as Record<string, SaverClass>;
    saverClass = module[pkg === "postgres" ? "PostgresSaver" : "SqliteSaver"];
  } catch (error) {
    throw new MissingPackageError(
      `reading the official ${pkg === "postgres" ? "PostgreSQL" : "SQLite"} saver's data needs its package: npm install ${name}`,
      [name],
      { cause: error },
    );
  }
  return new saverClass(undefined as never).serde;
}

/** Decodes a value with the official serializer; a failure names the row. */
export async function decodeOfficial(
  serde: SerializerProtocol,
  type: string | null,
  bytes: Uint8Array | string | null,
  where: string,
): Promise<unknown> {
  try {
    return await serde.loadsTyped(type ?? "json", bytes ?? "");
  } catch (error) {
    throw new SerializationError(
      `${where}: the official serializer cannot read this value (${error instanceof Error ? error.message : String(error)}); nothing of this thread was written`,
      { cause: error },
    );
  }
}

/** Encodes a value with our serializer. */
export async function encodeOurs(
  serde: SerializerProtocol,
  value: unknown,
  where: string,
): Promise<[string, Uint8Array]> {
  try {
    return await serde.dumpsTyped(value);
  } catch (error) {
    throw new SerializationError(
      `${where}: our serializer cannot write this value (${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  }
}

export interface OfficialRow {
  threadId: string;
  ns: string;
  checkpointId: string;
  parentCheckpointId: string | null;
  checkpoint: OfficialCheckpoint;
  metadata: unknown;
}

/** Where a checkpoint row is, for messages. */
export function rowName(table: string, row: { threadId: string; ns: string; checkpointId: string }): string {
  return `${table} row (thread_id "${row.threadId}", checkpoint_ns "${row.ns}", checkpoint_id "${row.checkpointId}")`;
}

/**
 * An official checkpoint as our checkpoint row: versions converted, the channel
 * values left out (they travel as blobs), `created_at` from the checkpoint's `ts`
 * (the official tables keep no time of their own).
 */
export async function toCheckpointRecord(
  ours: SerializerProtocol,
  row: OfficialRow,
  suffixOf: (channel: string) => string,
  where: string,
): Promise<CheckpointRecord> {
  if (row.checkpoint === null || typeof row.checkpoint !== "object") {
    throw new InvalidInputError(`${where}: the checkpoint is not an object`);
  }
  const { channel_values: _values, ...rest } = row.checkpoint;
  const { checkpoint, channelVersions } = convertVersions(rest, suffixOf, where);
  const createdAt = Date.parse(String(checkpoint.ts));
  if (Number.isNaN(createdAt)) throw new InvalidInputError(`${where}: the checkpoint's ts is not a date`);
  const metadata = row.metadata ?? {};
  if (typeof metadata !== "object" || Array.isArray(metadata)) {
    throw new InvalidInputError(`${where}: the metadata is not an object`);
  }
  const [type, bytes] = await encodeOurs(ours, checkpoint, where);
  return {
    kind: "checkpoint",
    ns: row.ns,
    checkpointId: row.checkpointId,
    parentCheckpointId: row.parentCheckpointId,
    createdAt,
    type,
    checkpoint: bytes,
    channelVersions,
    metadata: metadata as Record<string, unknown>,
  };
}

/** A pending-write row of either official saver, its value column under any name. */
export interface OfficialWriteRow {
  checkpoint_ns: string;
  checkpoint_id: string;
  task_id: string;
  idx: number | string;
  channel: string;
  type: string | null;
}

/** An official pending write as ours: its value read by the official serializer, written by ours. */
export async function toWriteRecord(
  serdes: { official: SerializerProtocol; ours: SerializerProtocol },
  table: string,
  threadId: string,
  row: OfficialWriteRow,
  data: Uint8Array | string | null,
): Promise<WriteRecord> {
  const where = `${table} row (thread_id "${threadId}", checkpoint_ns "${row.checkpoint_ns}", checkpoint_id "${row.checkpoint_id}", task_id "${row.task_id}", idx ${row.idx})`;
  const value = await decodeOfficial(serdes.official, row.type, data, where);
  const [type, bytes] = await encodeOurs(serdes.ours, value, where);
  return {
    kind: "write",
    ns: row.checkpoint_ns,
    checkpointId: row.checkpoint_id,
    taskId: row.task_id,
    idx: Number(row.idx),
    channel: row.channel,
    type,
    value: bytes,
    taskPath: "",
  };
}
