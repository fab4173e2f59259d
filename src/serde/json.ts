/**
 * Reading values stored in LangGraph's JSON format by our own rules: JsonPlusSerializer
 * would instantiate any langchain_core class a stored record names.
 */
import { DeltaSnapshot } from "@langchain/langgraph-checkpoint";
import { SerializationError } from "../errors.js";
import { checkJsonDepth, MAX_NESTING_DEPTH } from "./bounds.js";
import { reviveLangChain } from "./messages.js";

/**
 * Revives values written by LangGraph's JsonPlusSerializer: its lc:2 records
 * (undefined, Set, Map, RegExp, Error, Uint8Array, DeltaSnapshot) and LangChain
 * messages; every other record stays plain data.
 */
function reviveJson(value: unknown, depth: number): unknown {
  if (depth > MAX_NESTING_DEPTH) throw new SerializationError(`value nested deeper than ${MAX_NESTING_DEPTH} levels`);
  if (Array.isArray(value)) return value.map((item) => reviveJson(item, depth + 1));
  if (value === null || typeof value !== "object") return value;
  const object: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    Object.defineProperty(object, key, {
      value: reviveJson(item, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  const record = object as { lc?: unknown; type?: unknown; id?: unknown; args?: unknown; value?: unknown };
  if (record.lc === 1) return reviveLangChain(object);
  if (record.lc !== 2) return object;
  if (record.type === "undefined") return undefined;
  if (record.type === "delta_snapshot" && "value" in record) return new DeltaSnapshot(record.value);
  const name = Array.isArray(record.id) && record.id.length === 1 ? record.id[0] : undefined;
  const args = Array.isArray(record.args) ? record.args : [];
  if (record.type !== "constructor") return object;
  try {
    if (name === "Set" && Array.isArray(args[0])) return new Set(args[0]);
    if (name === "Map" && Array.isArray(args[0])) return new Map(args[0] as [unknown, unknown][]);
    if (name === "RegExp" && typeof args[0] === "string" && typeof args[1] === "string") {
      return new RegExp(args[0], args[1]);
    }
    if (name === "Error" && typeof args[0] === "string") return new Error(args[0]);
    if (name === "Uint8Array" && Array.isArray(args[0])) return Uint8Array.from(args[0] as number[]);
  } catch {
    return object;
  }
  return object;
}

/**
 * LangGraph's JSON format, revived by our own rules: JsonPlusSerializer would
 * instantiate any langchain_core class a stored record names.
 */
export function loadJson(data: Uint8Array | string): unknown {
  const text = typeof data === "string" ? data : new TextDecoder().decode(data);
  checkJsonDepth(text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new SerializationError(
      `cannot decode stored json value: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return reviveJson(parsed, 0);
}
