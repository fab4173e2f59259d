/**
 * Encryption keys for the command line, from the environment only (never from flags,
 * which end up in shell history and process listings): LANGGRAPH_CHECKPOINT_KEYS
 * ("id:base64,id:base64") and LANGGRAPH_CHECKPOINT_ACTIVE_KEY.
 */
import type { EncryptionOptions } from "../index.js";
import { describeKeyId } from "../serde/encryption-options.js";
import { UsageError } from "./errors.js";

export const KEYS_ENV = "LANGGRAPH_CHECKPOINT_KEYS";
export const ACTIVE_KEY_ENV = "LANGGRAPH_CHECKPOINT_ACTIVE_KEY";

/** The saver's `encryption` option from the environment; undefined when no keys are set. */
export function encryptionFromEnv(env: NodeJS.ProcessEnv = process.env): EncryptionOptions | undefined {
  const list = env[KEYS_ENV]?.trim();
  if (!list) {
    if (env[ACTIVE_KEY_ENV]?.trim()) throw new UsageError(`${ACTIVE_KEY_ENV} is set but ${KEYS_ENV} is not`);
    return undefined;
  }
  const keys: Record<string, string> = {};
  for (const entry of list.split(",")) {
    const colon = entry.indexOf(":");
    // The key itself is never quoted in a message.
    if (colon <= 0) throw new UsageError(`${KEYS_ENV}: each entry must be "id:base64"`);
    const id = entry.slice(0, colon).trim();
    // An id is quoted only when short enough to be one: "base64:id" would put the key there.
    if (Object.hasOwn(keys, id)) throw new UsageError(`${KEYS_ENV}: key id ${describeKeyId(id)} appears twice`);
    keys[id] = entry.slice(colon + 1).trim();
  }
  const ids = Object.keys(keys);
  const active = env[ACTIVE_KEY_ENV]?.trim() || (ids.length === 1 ? ids[0] : undefined);
  if (!active) {
    throw new UsageError(`${ACTIVE_KEY_ENV} must name the active key among ${ids.map(describeKeyId).join(", ")}`);
  }
  return { keys, activeKeyId: active };
}
