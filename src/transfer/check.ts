/**
 * Checks the rows of one imported thread before any of it becomes visible. Values are
 * stored as the source gives them, so a value that cannot be decoded would be found
 * only by the reads that meet it (a cross-thread `list` meets every thread's): here
 * each one is decoded with the target's serializer, under the bounds a read applies,
 * and every channel value a checkpoint names and every base an incremental value
 * extends must be among the thread's rows.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { InvalidInputError, SerializationError } from "../errors.js";
import { DELTA_TYPE_PREFIX, parseStoredChain } from "../savers/values/deltas.js";
import { serializeMetadata } from "../savers/values/metadata.js";
import { asBytes, tupleKey } from "../savers/values/values.js";
import { checkJsonDepth } from "../serde/bounds.js";
import type { BlobRecord, CheckpointRecord, TransferRecord } from "./records.js";

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

const blobName = (ns: string, channel: string, version: string) =>
  `the value of channel ${JSON.stringify(channel)} at version ${JSON.stringify(version)} (namespace ${JSON.stringify(ns)})`;

const checkpointName = (record: { ns: string; checkpointId: string }) =>
  `checkpoint ${JSON.stringify(record.checkpointId)} (namespace ${JSON.stringify(record.ns)})`;

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

  constructor(private readonly serde: SerializerProtocol) {}

  private async decode(what: string, type: string, bytes: Uint8Array | null): Promise<unknown> {
    try {
      return await this.serde.loadsTyped(type, asBytes(bytes));
    } catch (error) {
      throw new SerializationError(`${what} cannot be read: ${reasonOf(error)}`, { cause: error });
    }
  }

  async add(record: TransferRecord): Promise<void> {
    if (record.kind === "checkpoint") await this.addCheckpoint(record);
    else if (record.kind === "blob") await this.addBlob(record);
    else {
      const what = `the pending write of task ${JSON.stringify(record.taskId)} to channel ${JSON.stringify(record.channel)} of ${checkpointName(record)}`;
      await this.decode(what, record.type, record.value);
    }
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
