/**
 * Encryption at rest in transfers: sealed values are opened (checked against their
 * place in the source thread) for an import's checks and re-sealed for the target, or
 * opened for an export with `decrypt`. A sealed value never reaches a serializer.
 */
import { InvalidInputError } from "../errors.js";
import { blobPlace, writePlace } from "../savers/values/sealed-values.js";
import { isSealedType, type Place, type Sealer } from "../serde/sealing.js";
import type { TransferRecord } from "./records.js";

function placeOf(threadId: string, record: TransferRecord): Place | undefined {
  if (record.kind === "blob") {
    return blobPlace(threadId, record.ns, record.channel, record.version, record.deltaChain ?? null);
  }
  if (record.kind === "write") {
    return writePlace(threadId, record.ns, record.checkpointId, record.taskId, record.idx, record.channel);
  }
  return undefined;
}

function describe(threadId: string, record: TransferRecord): string {
  if (record.kind === "blob") {
    return `the value of channel ${JSON.stringify(record.channel)} (version ${JSON.stringify(record.version)}) of thread ${JSON.stringify(threadId)}`;
  }
  if (record.kind === "write") {
    return `the pending write of task ${JSON.stringify(record.taskId)} of thread ${JSON.stringify(threadId)}, checkpoint ${JSON.stringify(record.checkpointId)}`;
  }
  return `a checkpoint of thread ${JSON.stringify(threadId)}`;
}

/** Opens and seals the values of transfer records with the keys given, if any. */
export class RecordSealing {
  constructor(private readonly sealer: Sealer | undefined) {}

  /**
   * The record with its value in the clear. Plaintext values pass (sources in the clear,
   * official savers); a sealed one without keys is an error naming it.
   */
  open(threadId: string, record: TransferRecord): TransferRecord {
    if (record.kind === "checkpoint" || record.type === "empty" || !isSealedType(record.type)) return record;
    const where = describe(threadId, record);
    if (!this.sealer) {
      throw new InvalidInputError(`${where} is sealed (encryption at rest): give the keys (the encryption option)`);
    }
    const [type, value] = this.sealer.open(
      record.type,
      record.value ?? new Uint8Array(),
      placeOf(threadId, record) as Place,
      where,
      true,
    );
    return { ...record, type, value };
  }

  /** The record with its value sealed for its place in `threadId`, when there are keys. */
  seal(threadId: string, record: TransferRecord): TransferRecord {
    if (!this.sealer || record.kind === "checkpoint" || record.type === "empty" || record.value === null) return record;
    const [type, value] = this.sealer.seal(record.type, record.value, placeOf(threadId, record) as Place);
    return { ...record, type, value };
  }
}
