/**
 * LangChain messages in stored values: the allowlist of message classes that may be
 * revived, and the compact form a message is stored in.
 */
import {
  AIMessage,
  AIMessageChunk,
  ChatMessage,
  ChatMessageChunk,
  FunctionMessage,
  FunctionMessageChunk,
  HumanMessage,
  HumanMessageChunk,
  RemoveMessage,
  SystemMessage,
  SystemMessageChunk,
  ToolMessage,
  ToolMessageChunk,
} from "@langchain/core/messages";

/** Fields a message constructor fills with an empty value itself: not stored when empty. */
const DEFAULTED_FIELDS = ["additional_kwargs", "response_metadata", "tool_calls", "invalid_tool_calls"];

const isEmpty = (value: unknown) =>
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === "object" &&
    value !== null &&
    Object.getPrototypeOf(value) === Object.prototype &&
    Object.keys(value).length === 0);

/**
 * LangChain classes revived from `{ lc: 1, type: "constructor" }` records. Only
 * these are ever instantiated; any other record comes back as inert data, so a
 * row written by an attacker cannot make us load a module or run a constructor.
 */
const MESSAGE_CLASSES: Record<string, new (fields: never) => object> = {
  AIMessage,
  AIMessageChunk,
  ChatMessage,
  ChatMessageChunk,
  FunctionMessage,
  FunctionMessageChunk,
  HumanMessage,
  HumanMessageChunk,
  RemoveMessage,
  SystemMessage,
  SystemMessageChunk,
  ToolMessage,
  ToolMessageChunk,
};

const MESSAGE_CLASS_NAMES = new Map<unknown, string>(
  Object.entries(MESSAGE_CLASSES).map(([name, messageClass]) => [messageClass, name]),
);

interface LcRecord {
  lc: number;
  type: string;
  id: unknown;
  kwargs?: unknown;
}

export function isLangChainSerializable(value: object): value is { toJSON(): LcRecord } {
  const candidate = value as { lc_serializable?: unknown; toJSON?: unknown };
  return candidate.lc_serializable === true && typeof candidate.toJSON === "function";
}

/** Whether a value is stored as a message: exactly an allowlisted class, serializable (see compactMessage). */
export function isStoredAsMessage(value: object): boolean {
  return MESSAGE_CLASS_NAMES.has(value.constructor) && isLangChainSerializable(value);
}

/** [class name, fields] of a message of exactly an allowlisted class (a subclass would lose its behaviour). */
export function compactMessage(value: object): [string, Record<string, unknown>] | undefined {
  const name = MESSAGE_CLASS_NAMES.get(value.constructor);
  if (name === undefined || !isLangChainSerializable(value)) return undefined;
  const { type, kwargs } = value.toJSON();
  if (type !== "constructor" || typeof kwargs !== "object" || kwargs === null) return undefined;
  const fields = Object.entries(kwargs).filter(([key, field]) => !(DEFAULTED_FIELDS.includes(key) && isEmpty(field)));
  return [name, Object.fromEntries(fields)];
}

export function reviveLangChain(record: unknown): unknown {
  if (typeof record !== "object" || record === null) return record;
  const { lc, type, id, kwargs } = record as LcRecord;
  const isMessagePath =
    Array.isArray(id) &&
    id.length >= 2 &&
    (id[0] === "langchain_core" || id[0] === "langchain") &&
    id.includes("messages");
  const name = Array.isArray(id) ? id[id.length - 1] : undefined;
  if (
    lc === 1 &&
    type === "constructor" &&
    isMessagePath &&
    typeof name === "string" &&
    Object.hasOwn(MESSAGE_CLASSES, name) &&
    typeof kwargs === "object" &&
    kwargs !== null
  ) {
    try {
      return new MESSAGE_CLASSES[name](kwargs as never);
    } catch {
      return record;
    }
  }
  return record;
}
