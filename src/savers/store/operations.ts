/**
 * The operations of a `batch`, checked before anything runs (bad input is an
 * InvalidInputError and writes nothing) and put in the form the statements need:
 * namespaces encoded, puts to one key merged (the last wins).
 */
import type {
  GetOperation,
  ListNamespacesOperation,
  Operation,
  PutOperation,
  SearchOperation,
} from "@langchain/langgraph-checkpoint";
import type { StoreDialect } from "../../dialects/store-dialect.js";
import { describeValue, InvalidInputError } from "../../errors.js";
import { MAX_KEY_BYTES } from "../values/values.js";
import { checkText, parseFilter } from "./filters.js";
import { checkNamespace, encodePath, type MatchCondition } from "./namespaces.js";

export interface GetPlan {
  kind: "get";
  namespace: string[];
  path: string;
  key: string;
  /** Renew the ttl of the item read; undefined: the store's `refreshOnRead`. */
  refreshTtl?: boolean;
}

export interface SearchPlan {
  kind: "search";
  prefix: string[];
  filter: unknown;
  limit: number;
  offset: number;
  query?: string;
  refreshTtl?: boolean;
}

export interface ListPlan {
  kind: "list";
  conditions: MatchCondition[];
  maxDepth?: number;
  limit: number;
  offset: number;
}

export interface PutPlan {
  kind: "put";
  namespace: string[];
  path: string;
  key: string;
  /** JSON text of the value; null deletes the item. */
  json: string | null;
  value: Record<string, unknown> | null;
  /** Fields to embed: false none, undefined the store's default fields. */
  index?: false | string[];
  /** Minutes until it expires; null never; undefined the store's default. */
  ttl?: number | null;
}

export type Plan = GetPlan | SearchPlan | ListPlan | PutPlan;

/** This store's extensions of LangGraph's operations: a put's time to live, a read's refresh. */
export interface TtlExtensions {
  ttl?: number | null;
  refreshTtl?: boolean;
}

function checkRefresh(refresh: unknown): boolean | undefined {
  if (refresh !== undefined && typeof refresh !== "boolean") {
    throw new InvalidInputError(`refreshTtl must be a boolean, got ${describeValue(refresh)}`);
  }
  return refresh;
}

function nonNegativeInteger(value: unknown, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidInputError(`${what} must be a non-negative integer, got ${String(value)}`);
  }
  return value;
}

function checkLength(text: string, limit: number | undefined, what: string): void {
  if (limit !== undefined && Buffer.byteLength(text, "utf8") > limit) {
    throw new InvalidInputError(`${what} is longer than the ${limit} bytes (UTF-8) this database's store table holds`);
  }
}

/**
 * The item's primary key, namespace path and key together, within the saver's bound for
 * a row's key on every database (PostgreSQL's B-tree entries hold at most 2704 bytes).
 */
function checkKeyBytes(path: string, key: string): void {
  const bytes = Buffer.byteLength(path, "utf8") + Buffer.byteLength(key, "utf8");
  if (bytes > MAX_KEY_BYTES) {
    throw new InvalidInputError(
      `the namespace (labels joined by '.') and the key are ${bytes} bytes of UTF-8 together; the limit is ${MAX_KEY_BYTES}`,
    );
  }
}

/** What a value nested deeper than `most` levels is told. */
const tooDeep = (most: number) =>
  new InvalidInputError(
    `a store value nests objects and arrays more than ${most} levels deep, the most this database's JSON holds`,
  );

/**
 * Strings (and member names) of a JSON value that every database stores (see checkText),
 * and its nesting: `level` objects and arrays enclose `value`, at most `most` in all.
 */
function checkJsonValue(value: unknown, where: string, level: number, most: number): void {
  if (typeof value === "string") checkText(value, `the value at ${where}`);
  else if (typeof value === "object" && value !== null) {
    if (level >= most) throw tooDeep(most);
    if (Array.isArray(value)) {
      for (const [i, element] of value.entries()) checkJsonValue(element, `${where}[${i}]`, level + 1, most);
    } else {
      for (const [name, member] of Object.entries(value)) {
        checkText(name, `a member name at ${where}`);
        checkJsonValue(member, `${where}.${name}`, level + 1, most);
      }
    }
  }
}

function valueJson(value: unknown, maxDepth: number): string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidInputError(`a store value must be an object (or null to delete), got ${describeValue(value)}`);
  }
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    // Only a value thousands of levels deep exhausts the stack: beyond any database's limit.
    if (error instanceof RangeError && /call stack/i.test(error.message)) throw tooDeep(maxDepth);
    throw new InvalidInputError(`the value cannot be stored as JSON: ${(error as Error).message}`, { cause: error });
  }
  // toJSON can make an object something else (a Date a string), which no read could return as an item.
  if (json === undefined || !json.startsWith("{")) {
    throw new InvalidInputError(
      `a store value must serialize to a JSON object; this ${describeValue(value)} serializes to ${json === undefined ? "nothing" : json.slice(0, 40)}`,
    );
  }
  checkJsonValue(JSON.parse(json), "$", 0, maxDepth);
  return json;
}

/**
 * The longest ttl, in minutes: an expiry (epoch milliseconds) must stay a safe integer, which
 * the BIGINT columns hold (a larger one was the database's own overflow error). Half of that
 * range, the other half left for the clock: some 142,000 years.
 */
export const MAX_TTL_MINUTES = Math.floor(Number.MAX_SAFE_INTEGER / 60_000 / 2);

function checkTtl(ttl: unknown): number | null | undefined {
  if (ttl === undefined || ttl === null) return ttl;
  if (typeof ttl !== "number" || !Number.isFinite(ttl) || ttl <= 0) {
    throw new InvalidInputError(`ttl must be a positive number of minutes or null, got ${String(ttl)}`);
  }
  if (ttl > MAX_TTL_MINUTES) throw new InvalidInputError(`ttl must be at most ${MAX_TTL_MINUTES} minutes, got ${ttl}`);
  return ttl;
}

function checkIndex(index: unknown): false | string[] | undefined {
  if (index === undefined || index === null || index === false) return index === false ? false : undefined;
  if (!Array.isArray(index) || !index.every((field) => typeof field === "string")) {
    throw new InvalidInputError(`index must be false or an array of field paths, got ${describeValue(index)}`);
  }
  return index;
}

function checkConditions(conditions: unknown): MatchCondition[] {
  if (conditions === undefined || conditions === null) return [];
  if (!Array.isArray(conditions)) throw new InvalidInputError("matchConditions must be an array");
  return conditions.map((condition: { matchType?: unknown; path?: unknown }) => {
    if (condition?.matchType !== "prefix" && condition?.matchType !== "suffix") {
      throw new InvalidInputError(`matchType must be "prefix" or "suffix", got ${String(condition?.matchType)}`);
    }
    const path = checkNamespace(condition.path, `listNamespaces ${condition.matchType}`, {
      allowEmpty: true,
      allowReservedRoot: true,
    });
    return { matchType: condition.matchType, path };
  });
}

/** Namespaces that reads and removals may name: the empty one and LangGraph's reserved root. */
const LENIENT = { allowEmpty: true, allowReservedRoot: true };

function planSearch(op: SearchOperation): SearchPlan {
  if (op.query !== undefined && typeof op.query !== "string") throw new InvalidInputError("query must be a string");
  // Checked here, before any write or model call: a search with limit 0 never builds its SQL.
  parseFilter(op.filter);
  return {
    kind: "search",
    prefix: checkNamespace(op.namespacePrefix, "search namespace prefix", LENIENT),
    filter: op.filter,
    limit: nonNegativeInteger(op.limit, 10, "limit"),
    offset: nonNegativeInteger(op.offset, 0, "offset"),
    // An empty query is no query, as in InMemoryStore and the official PostgresStore: not the embedding of "".
    query: op.query === "" ? undefined : op.query,
    refreshTtl: checkRefresh((op as TtlExtensions).refreshTtl),
  };
}

/** A put; a null value is a removal, which may name any namespace a read may. */
function planPut(store: StoreDialect, op: PutOperation): PutPlan {
  const namespace = checkNamespace(op.namespace, "namespace", op.value === null ? LENIENT : {});
  const key = checkText(op.key, "key");
  const path = encodePath(namespace);
  const json = op.value === null ? null : valueJson(op.value, store.maxJsonDepth);
  if (json !== null) {
    checkLength(path, store.limits?.pathBytes, "the namespace (labels joined by '.')");
    checkLength(key, store.limits?.keyBytes, "the key");
    checkKeyBytes(path, key);
  }
  return {
    kind: "put",
    namespace,
    path,
    key,
    json,
    value: op.value,
    index: checkIndex(op.index),
    ttl: checkTtl((op as TtlExtensions).ttl),
  };
}

function planGet(op: GetOperation): GetPlan {
  const namespace = checkNamespace(op.namespace, "namespace", LENIENT);
  return {
    kind: "get",
    namespace,
    path: encodePath(namespace),
    key: checkText(op.key, "key"),
    refreshTtl: checkRefresh((op as TtlExtensions).refreshTtl),
  };
}

function planList(op: ListNamespacesOperation): ListPlan {
  const maxDepth = op.maxDepth;
  if (maxDepth !== undefined && (!Number.isSafeInteger(maxDepth) || maxDepth < 1)) {
    throw new InvalidInputError(`maxDepth must be a positive integer, got ${String(maxDepth)}`);
  }
  return {
    kind: "list",
    conditions: checkConditions(op.matchConditions),
    maxDepth,
    limit: nonNegativeInteger(op.limit, 100, "limit"),
    offset: nonNegativeInteger(op.offset, 0, "offset"),
  };
}

/** An operation's kind, told by its fields as BaseStore's batch tells them. */
function planOne(store: StoreDialect, op: Operation): Plan {
  if (typeof op !== "object" || op === null) throw new InvalidInputError(`not a store operation: ${describeValue(op)}`);
  if ("namespacePrefix" in op) return planSearch(op);
  if ("namespace" in op && "key" in op && "value" in op) return planPut(store, op);
  if ("namespace" in op && "key" in op) return planGet(op);
  if ("matchConditions" in op || "limit" in op) return planList(op as ListNamespacesOperation);
  throw new InvalidInputError(`not a store operation: ${JSON.stringify(Object.keys(op))}`);
}

/** Every operation checked, in order; throws before anything runs. */
export function planBatch(store: StoreDialect, operations: unknown): Plan[] {
  if (!Array.isArray(operations)) throw new InvalidInputError("batch expects an array of operations");
  return operations.map((op) => planOne(store, op as Operation));
}

/** The puts of a batch, one per item: the last put to a key wins. */
export function lastPuts(plans: Plan[]): PutPlan[] {
  const last = new Map<string, PutPlan>();
  for (const plan of plans) {
    if (plan.kind !== "put") continue;
    const id = `${plan.path}\0${plan.key}`;
    last.delete(id); // re-inserted: the map keeps the order of the last puts
    last.set(id, plan);
  }
  return [...last.values()];
}
