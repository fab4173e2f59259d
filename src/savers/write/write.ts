/**
 * The write path, `put` and `putWrites`: checks the input, serialises it (as deltas where
 * a value extends an array this process knows) and writes each call as one atomic unit.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type PendingWrite,
  type SerializerProtocol,
  WRITES_IDX_MAP,
} from "@langchain/langgraph-checkpoint";
import type { Dialect } from "../../dialects/dialect.js";
import { describeValue, InvalidInputError, MissingParentError } from "../../errors.js";
import type { Templates } from "../../sql/statements.js";
import { WHOLE } from "../values/delta-read.js";
import { DELTA_TYPE_PREFIX, type DeltaCache } from "../values/deltas.js";
import { serializeMetadata } from "../values/metadata.js";
import { requireThreadId } from "../values/reserved.js";
import { blobPlace, type ValueSealing, writePlace } from "../values/sealed-values.js";
import {
  type CheckpointKey,
  configOf,
  configurableOf,
  isRecord,
  optionalNamespace,
  requireId,
  requireKeyWithinLimit,
  requireStorableText,
  toBuffer,
  tupleKey,
} from "../values/values.js";
import { isStorableVersion, storedVersion, storedVersions } from "./versions.js";
import { WriteStatements } from "./write-statements.js";

/**
 * The keys of the last `size` checkpoints a saver stored, the oldest forgotten first: a
 * ring of keys beside a set (taking the first of a Set that keeps losing its first
 * entries walks over their tombstones). A key stored again keeps its first place.
 */
class RecentKeys {
  private readonly keys = new Set<string>();
  private readonly ring: (string | undefined)[];
  private next = 0;

  constructor(size: number) {
    this.ring = new Array<string | undefined>(size);
  }

  add(key: string): void {
    if (this.keys.has(key)) return;
    const oldest = this.ring[this.next];
    if (oldest !== undefined) this.keys.delete(oldest);
    this.ring[this.next] = key;
    this.next = (this.next + 1) % this.ring.length;
    this.keys.add(key);
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }
}

/** The write path: `put` and `putWrites`, each one atomic unit. */
export class CheckpointWriter {
  /** Checkpoints this saver's puts stored; see putWrites. */
  private readonly stored = new RecentKeys(10_000);

  private readonly statements: WriteStatements;

  constructor(
    private readonly dialect: Dialect,
    private readonly serde: SerializerProtocol,
    templates: Templates,
    private readonly deltas: DeltaCache,
    private readonly sealing: ValueSealing,
    /** Metadata keys never stored (excludeMetadataKeys). */
    private readonly excludedMetadata: readonly string[] = [],
  ) {
    this.statements = new WriteStatements(dialect, templates);
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
    useDeltas = this.deltas.enabled,
  ): Promise<RunnableConfig> {
    const { threadId, ns, parentId, checkpointId } = readPutInput(config, checkpoint, newVersions);
    // Serialise everything before touching the database, so bad input writes nothing.
    // Versions read back from integers (versions.ts) are stored as they were, the key of their values.
    const { channel_values: values = {}, ...rest } = checkpoint;
    const withoutValues = { ...rest, channel_versions: storedVersions(checkpoint.channel_versions) };
    const metadataJson = serializeMetadata(this.withoutExcluded(metadata), this.dialect.maxJsonDepth);
    const key = { threadId, ns, checkpointId };
    // Every value is serialised before the first await, as the call finds it: with
    // asynchronous durability LangGraph runs the next step meanwhile, and a node may
    // change a value it was given in place (MemorySaver, too, keeps the value as called).
    const [{ rows: blobRows, remember }, [checkpointType, checkpointBytes]] = await Promise.all([
      this.blobRows(key, parentId, values, newVersions, useDeltas),
      this.dump(withoutValues),
    ]);
    const usesDeltas = blobRows.some((row) => row[6] !== null);
    const checkpointRow = [
      threadId,
      ns,
      checkpointId,
      parentId,
      checkpointType,
      toBuffer(checkpointBytes),
      JSON.stringify(withoutValues.channel_versions),
      metadataJson,
    ];
    const statements = [
      ...this.statements.threadRow(threadId, ns, checkpointId, metadataJson),
      ...this.statements.blobInserts(blobRows, usesDeltas),
      this.statements.checkpointUpsert(checkpointRow),
    ];
    // Channels this put does not write refer to values its parent's steps stored: the
    // parent must still exist when it lands (a deleteThread may have removed both).
    const reliesOnStoredValues = Object.keys(checkpoint.channel_versions).some(
      (channel) => !Object.hasOwn(newVersions, channel),
    );
    // A delta's base is named by the parent: locking the parent keeps it (see remove.ts).
    // The parent is locked after the thread's row, the first lock of every unit changing
    // a thread: a removal holding the row deletes the parent next (before, a deadlock).
    const precondition =
      parentId !== null && (reliesOnStoredValues || usesDeltas)
        ? {
            ...this.statements.checkpointExists(threadId, ns, parentId, `put: parent checkpoint "${parentId}"`),
            afterFirst: true,
          }
        : undefined;
    try {
      await this.dialect.atomically(statements, precondition);
    } catch (error) {
      // Without its parent a delta has no base: store the values whole, as a cold process would.
      if (error instanceof MissingParentError && usesDeltas && !reliesOnStoredValues) {
        return this.put(config, checkpoint, metadata, newVersions, false);
      }
      throw error;
    }
    this.stored.add(tupleKey([threadId, ns, checkpointId]));
    remember();
    for (const [channel, version] of Object.entries(checkpoint.channel_versions)) {
      if (!Object.hasOwn(newVersions, channel))
        this.deltas.carry(threadId, ns, channel, String(storedVersion(version)), checkpointId);
    }
    return configOf(key);
  }

  /** The metadata without the keys the application keeps out of the database. */
  private withoutExcluded(metadata: CheckpointMetadata): CheckpointMetadata {
    if (this.excludedMetadata.length === 0 || !isRecord(metadata)) return metadata;
    const kept: Record<string, unknown> = { ...metadata };
    for (const key of this.excludedMetadata) delete kept[key];
    return kept as CheckpointMetadata;
  }

  /** The serializer's dumpsTyped, called now; a synchronous throw becomes the promise's rejection. */
  private dump(value: unknown): Promise<[string, Uint8Array]> {
    try {
      return Promise.resolve(this.serde.dumpsTyped(value));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The checkpoint_blobs rows of a put, serialised, and what to remember of them once
   * stored. An array extending a value this process knows becomes a delta (deltas.ts).
   * Every value is handed to the serializer before this returns (see put).
   */
  private blobRows(
    key: CheckpointKey,
    parentId: string | null,
    values: Record<string, unknown>,
    newVersions: ChannelVersions,
    useDeltas: boolean,
  ): Promise<{ rows: unknown[][]; remember: () => void }> {
    const { threadId, ns } = key;
    const channels = Object.entries(newVersions).map(([channel, version]) => {
      requireId(channel, "channel name");
      requireVersion(channel, version);
      const stored = String(storedVersion(version));
      requireKeyWithinLimit([threadId, ns, channel, stored], `put: the key of channel "${channel}"`);
      return { channel, stored };
    });
    const pending = channels.map(async ({ channel, stored }) => {
      if (!Object.hasOwn(values, channel)) {
        return {
          row: [threadId, ns, channel, stored, "empty", null, null],
          remember: () => this.deltas.remember(key, channel, stored, undefined, WHOLE),
        };
      }
      const value = values[channel];
      const plan = useDeltas ? this.deltas.plan(threadId, ns, channel, parentId, value) : undefined;
      // What the elements hold as they are serialized: the caller may change them before the write ends.
      const snapshots = plan ? plan.snapshots : this.deltas.snapshots(value);
      const chain = plan ? JSON.stringify(plan.chain) : null;
      const [type, bytes] = await this.dump(plan ? plan.appended : value);
      const place = blobPlace(threadId, ns, channel, stored, chain);
      const [sealedType, sealed] = this.sealing.seal(plan ? `${DELTA_TYPE_PREFIX}${type}` : type, bytes, place, true);
      return {
        row: [threadId, ns, channel, stored, sealedType, toBuffer(sealed), chain],
        remember: () => this.deltas.remember(key, channel, stored, value, plan?.lineage ?? WHOLE, snapshots),
      };
    });
    return Promise.all(pending).then((done) => ({
      rows: done.map(({ row }) => row),
      remember: () => {
        for (const { remember } of done) remember();
      },
    }));
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    const configurable = configurableOf(config, "putWrites");
    const threadId = requireThreadId(configurable.thread_id);
    const ns = optionalNamespace(configurable.checkpoint_ns) ?? "";
    const checkpointId = requireId(configurable.checkpoint_id, "putWrites: checkpoint_id");
    requireId(taskId, "task id");
    requireKeyWithinLimit([threadId, ns, checkpointId, taskId], "putWrites: the key of the task's writes");
    if (!Array.isArray(writes)) throw new InvalidInputError("putWrites: writes must be an array");
    if (typeof taskPath !== "string") throw new InvalidInputError("putWrites: task path must be a string");
    requireStorableText(taskPath, "putWrites: task path");

    // Special channels share one idx per task: a later write to the same one replaces
    // an earlier one (as a resumed node's second `__resume__` does), also within a call.
    const special = new Map<number, unknown[]>();
    const regular: unknown[][] = [];
    for (const [i, write] of writes.entries()) {
      if (!Array.isArray(write) || typeof write[0] !== "string") {
        throw new InvalidInputError(`putWrites: write ${i} must be a [channel, value] pair`);
      }
      const [channel, value] = write;
      requireId(channel, `putWrites: the channel of write ${i}`);
      const [plainType, plain] = await this.serde.dumpsTyped(value);
      // Own properties only: "constructor" or "toString" are ordinary channels.
      const isSpecial = Object.hasOwn(WRITES_IDX_MAP, channel);
      const idx = isSpecial ? WRITES_IDX_MAP[channel] : i;
      const place = writePlace(threadId, ns, checkpointId, taskId, idx, channel);
      const [type, bytes] = this.sealing.seal(plainType, plain, place);
      const row = [threadId, ns, checkpointId, taskId, idx, channel, type, toBuffer(bytes), taskPath];
      if (isSpecial) special.set(idx, row);
      else regular.push(row);
    }
    if (special.size + regular.length === 0) return;

    const statements = this.statements.writeInserts([...special.values()], regular);
    // Writes to a checkpoint this saver stored need it to still exist, locked like put's
    // parent: a delete racing them either removes them with it or makes them fail. One it
    // has not stored may still be on its way: with LangGraph's default "async" durability
    // a step's writes are sent before its checkpoint's put has landed.
    const precondition = this.stored.has(tupleKey([threadId, ns, checkpointId]))
      ? this.statements.checkpointExists(threadId, ns, checkpointId, `putWrites: checkpoint "${checkpointId}"`)
      : undefined;
    await this.dialect.atomically(statements, precondition);
  }
}

/** put's configurable and checkpoint, checked before anything is serialised or written. */
function readPutInput(config: RunnableConfig, checkpoint: Checkpoint, newVersions: ChannelVersions) {
  const configurable = configurableOf(config, "put");
  const threadId = requireThreadId(configurable.thread_id);
  const ns = optionalNamespace(configurable.checkpoint_ns) ?? "";
  const parentId =
    configurable.checkpoint_id === undefined ? null : requireId(configurable.checkpoint_id, "checkpoint_id");
  if (!isRecord(checkpoint)) throw new InvalidInputError("put: checkpoint must be an object");
  if (!isRecord(newVersions)) throw new InvalidInputError("put: newVersions must be an object");
  if (checkpoint.channel_values !== undefined && !isRecord(checkpoint.channel_values)) {
    throw new InvalidInputError("put: checkpoint.channel_values must be an object");
  }
  if (!isRecord(checkpoint.channel_versions)) {
    throw new InvalidInputError("put: checkpoint.channel_versions must be an object");
  }
  for (const [channel, version] of Object.entries(checkpoint.channel_versions)) requireVersion(channel, version);
  const checkpointId = requireId(checkpoint.id, "checkpoint.id");
  requireKeyWithinLimit([threadId, ns, checkpointId], "put: the checkpoint's key");
  return { threadId, ns, parentId, checkpointId };
}

/** Refuses a version that cannot name its value's row ({@link isStorableVersion}). */
function requireVersion(channel: string, version: unknown): void {
  if (isStorableVersion(version)) return;
  throw new InvalidInputError(
    `put: the version of channel "${channel}" must be a string or a finite number without an exponent, got ${typeof version === "number" ? String(version) : describeValue(version)}`,
  );
}
