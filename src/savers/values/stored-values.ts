/**
 * Decoding stored values; a row that cannot be decoded fails only the read that meets it,
 * with a SerializationError naming the row.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { SerializationError } from "../../errors.js";
import { asBytes, type CheckpointKey } from "./values.js";

/** Which stored value is being read, for the error that names it. */
export interface StoredValuePlace {
  key: CheckpointKey;
  /** Absent for the checkpoint itself. */
  channel?: string;
  /** Set for a pending write. */
  taskId?: string;
}

function describePlace({ key, channel, taskId }: StoredValuePlace): string {
  const what =
    channel === undefined
      ? "the checkpoint"
      : taskId === undefined
        ? `the value of channel ${JSON.stringify(channel)}`
        : `the pending write of task ${JSON.stringify(taskId)} to channel ${JSON.stringify(channel)}`;
  return `${what} of thread ${JSON.stringify(key.threadId)}, namespace ${JSON.stringify(key.ns)}, checkpoint ${JSON.stringify(key.checkpointId)}`;
}

/**
 * Decodes one stored value. A row that cannot be decoded (damaged, or crafted by
 * someone with write access to the tables) fails the read that meets it with a
 * SerializationError naming the row; nothing else is affected.
 */
export async function decodeStored(
  serde: SerializerProtocol,
  type: unknown,
  data: unknown,
  place: StoredValuePlace,
): Promise<unknown> {
  try {
    return await serde.loadsTyped(String(type), asBytes(data));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new SerializationError(`cannot read ${describePlace(place)}: ${reason}`, { cause: error });
  }
}
