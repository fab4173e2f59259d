/**
 * Checks the rows of one imported thread before any of it becomes visible. Values are
 * stored as the source gives them, so a value that cannot be decoded would be found
 * only by the reads that meet it (a cross-thread `list` meets every thread's): here
 * each one is decoded with the target's serializer, under the bounds a read applies,
 * and every channel value a checkpoint names and every base an incremental value
 * extends must be among the thread's rows. A row given twice must be given the same
 * both times: the import keeps the first, so a different second one would be dropped.
 */
import { createHash } from "node:crypto";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { InvalidInputError, SerializationError } from "../errors.js";
import { DELTA_TYPE_PREFIX, parseStoredChain } from "../savers/values/deltas.js";
import { serializeMetadata } from "../savers/values/metadata.js";
import { asBytes, tupleKey } from "../savers/values/values.js";
import { isStorableVersion } from "../savers/write/versions.js";
import { checkJsonDepth } from "../serde/bounds.js";
import type { BlobRecord, CheckpointRecord, TransferRecord, WriteRecord } from "./records.js";

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

const blobName = (ns: string, channel: string, version: string) =>
  `the value of channel ${JSON.stringify(channel)} at version ${JSON.stringify(version)} (namespace ${JSON.stringify(ns)})`;

const checkpointName = (record: { ns: string; checkpointId: string }) =>
  `checkpoint ${JSON.stringify(record.checkpointId)} (namespace ${JSON.stringify(record.ns)})`;

const writeName = (record: WriteRecord) =>
  `the pending write of task ${JSON.stringify(record.taskId)} to channel ${JSON.stringify(record.channel)} of ${checkpointName(record)}`;

/** The row a record becomes (its table's key), and a name for messages. */
function rowOf(record: TransferRecord): { key: string; name: () => string } {
  switch (record.kind) {
    case "checkpoint":
      return { key: tupleKey(["c", record.ns, record.checkpointId]), name: () => checkpointName(record) };
    case "blob":
      return {
        key: tupleKey(["b", record.ns, record.channel, record.version]),
        name: () => blobName(record.ns, record.channel, record.version),
      };
    case "write":
      return {
        key: tupleKey(["w", record.ns, record.checkpointId, record.taskId, String(record.idx)]),
        name: () => `${writeName(record)} at index ${record.idx}`,
      };
  }
}

/** A digest of everything a record stores: its fields as JSON, then its bytes. */
function contentDigest(record: TransferRecord): string {
  const bytes = record.kind === "checkpoint" ? record.checkpoint : record.value;
  const hash = createHash("sha256").update(JSON.stringify({ ...record, checkpoint: undefined, value: undefined }));
  if (bytes) hash.update(bytes);
  return hash.digest("base64");
}

/** A blob row as the checks at the end need it: incremental or whole, and whether its value is an array. */
interface BlobShape {
  delta: boolean;
  array: boolean;
}

/** One thread's rows, checked as they pass; `finish` checks what the rows name of each other. */
export class ThreadChecker {
  private readonly blobs = new Map<string, BlobShape>();
  /** Blob keys the checkpoints name, each with the first checkpoint that names it. */
  private readonly named = new Map<string, string>();
  /** The bases each incremental value extends, whole value first. */
  private readonly chains: { name: string; bases: string[]; versions: string[] }[] = [];
  /** The digest of each row's content, by its key: a repeated row must repeat it. */
  private readonly rows = new Map<string, string>();

  constructor(private readonly serde: SerializerProtocol) {}

  private async decode(what: string, type: string, bytes: Uint8Array | null): Promise<unknown> {
    try {
      return await this.serde.loadsTyped(type, asBytes(bytes));
    } catch (error) {
      throw new SerializationError(`${what} cannot be read: ${reasonOf(error)}`, { cause: error });
    }
  }

  async add(record: TransferRecord): Promise<void> {
    if (this.repeated(record)) return;
    if (record.kind === "checkpoint") await this.addCheckpoint(record);
    else if (record.kind === "blob") await this.addBlob(record);
    else await this.decode(writeName(record), record.type, record.value);
  }

  /** Whether the record's row was given before, with the same content (a different one is an error). */
  private repeated(record: TransferRecord): boolean {
    const { key, name } = rowOf(record);
    const digest = contentDigest(record);
    const before = this.rows.get(key);
    if (before === undefined) {
      this.rows.set(key, digest);
      return false;
    }
    if (before !== digest) throw new InvalidInputError(`${name()} is given twice, with different contents`);
    return true;
  }

  private async addCheckpoint(record: CheckpointRecord): Promise<void> {
    const name = checkpointName(record);
    const stored = await this.decode(name, record.type, record.checkpoint);
    if (stored === null || typeof stored !== "object" || Array.isArray(stored)) {
      throw new InvalidInputError(`${name} is not an object`);
    }
    // What a read looks blobs up by: the versions inside the checkpoint, not the JSON copy beside it.
    const versions = (stored as { channel_versions?: unknown }).channel_versions ?? {};
    if (versions === null || typeof versions !== "object" || Array.isArray(versions)) {
      throw new InvalidInputError(`${name}: its channel_versions is not an object`);
    }
    const entries = Object.entries(versions as Record<string, unknown>);
    const unstorable = entries.find(([, version]) => !isStorableVersion(version));
    if (unstorable) {
      throw new InvalidInputError(
        `${name}: the version of channel ${JSON.stringify(unstorable[0])} is ${String(unstorable[1])}, which cannot name a value (a string or a finite number without an exponent)`,
      );
    }
    const copy = record.channelVersions;
    if (
      entries.length !== Object.keys(copy).length ||
      entries.some(([channel, version]) => !Object.hasOwn(copy, channel) || String(copy[channel]) !== String(version))
    ) {
      throw new InvalidInputError(`${name}: "channel_versions" differs from the versions inside the checkpoint`);
    }
    for (const [channel, version] of entries) {
      const key = tupleKey([record.ns, channel, String(version)]);
      if (!this.named.has(key)) this.named.set(key, `${name} names ${blobName(record.ns, channel, String(version))}`);
    }
    try {
      checkJsonDepth(serializeMetadata(record.metadata));
    } catch (error) {
      throw new InvalidInputError(`${name}: its metadata cannot be stored: ${reasonOf(error)}`, { cause: error });
    }
  }

  private async addBlob(record: BlobRecord): Promise<void> {
    const name = blobName(record.ns, record.channel, record.version);
    let chain: ReturnType<typeof parseStoredChain>;
    try {
      chain = parseStoredChain(record.deltaChain);
    } catch (error) {
      throw new InvalidInputError(`${name}: its delta_chain is not valid: ${reasonOf(error)}`, { cause: error });
    }
    const key = tupleKey([record.ns, record.channel, record.version]);
    const delta = record.type.startsWith(DELTA_TYPE_PREFIX);
    if (record.type === "empty") {
      this.blobs.set(key, { delta, array: false }); // a version without a value: reads skip it
      return;
    }
    if (chain === undefined) {
      const value = await this.decode(name, record.type, record.value);
      this.blobs.set(key, { delta, array: Array.isArray(value) });
      return;
    }
    if (!delta) throw new InvalidInputError(`${name} has a delta_chain but is not of a "${DELTA_TYPE_PREFIX}" type`);
    const value = await this.decode(name, record.type.slice(DELTA_TYPE_PREFIX.length), record.value);
    if (!Array.isArray(value)) throw new InvalidInputError(`${name} is an incremental value but not an array`);
    this.blobs.set(key, { delta, array: true });
    this.chains.push({
      name,
      bases: chain.bases.map((version) => tupleKey([record.ns, record.channel, version])),
      versions: chain.bases,
    });
  }

  /** After the thread's last row: every value named is there, and every chain starts with a whole value. */
  finish(): void {
    for (const [key, naming] of this.named) {
      if (!this.blobs.has(key)) throw new InvalidInputError(`${naming}, which the source does not hold`);
    }
    for (const { name, bases, versions } of this.chains) {
      bases.forEach((key, i) => {
        const base = this.blobs.get(key);
        const version = JSON.stringify(versions[i]);
        if (!base) throw new InvalidInputError(`${name} extends version ${version}, which the source does not hold`);
        if (base.delta !== i > 0) {
          throw new InvalidInputError(
            `${name} extends version ${version}, which is ${base.delta ? "incremental" : "whole"} where its chain needs the other`,
          );
        }
        if (!base.array) throw new InvalidInputError(`${name} extends version ${version}, which is not an array`);
      });
    }
  }
}
