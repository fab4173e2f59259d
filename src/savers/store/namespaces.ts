/**
 * Store namespaces as the items table keeps them: labels joined by ".", which no label
 * may contain (LangGraph's rule), so a path names one namespace and a namespace's
 * descendants are exactly the paths in the range [P + ".", P + "/"): "." and "/" are
 * adjacent bytes. Prefix search is that range on the primary key, never LIKE, so
 * `_ % \` are plain characters and ["tenant", "acme"] never reaches "acme-corp".
 */
import { type SQL, sql } from "drizzle-orm";
import type { StoreDialect } from "../../dialects/store-dialect.js";
import { describeValue, InvalidNamespaceError } from "../../errors.js";

const SEPARATOR = ".";
/** The byte after the separator: the end of a namespace's range of descendants. */
const AFTER_SEPARATOR = "/";

export interface NamespaceRules {
  /** An empty namespace is accepted (a search or list prefix, a get). */
  allowEmpty?: boolean;
  /** A first label "langgraph" is accepted (everything but a put). */
  allowReservedRoot?: boolean;
}

/** LangGraph's namespace rules (`validateNamespace`), throwing our error. */
export function checkNamespace(namespace: unknown, what: string, rules: NamespaceRules = {}): string[] {
  if (!Array.isArray(namespace)) {
    throw new InvalidNamespaceError(`${what} must be an array of labels, got ${describeValue(namespace)}`);
  }
  if (namespace.length === 0 && !rules.allowEmpty) throw new InvalidNamespaceError(`${what} cannot be empty`);
  for (const label of namespace) {
    if (typeof label !== "string") {
      throw new InvalidNamespaceError(`${what}: labels must be strings, got ${describeValue(label)}`);
    }
    if (label === "") throw new InvalidNamespaceError(`${what}: labels cannot be empty strings`);
    if (label.includes(".")) throw new InvalidNamespaceError(`${what}: label "${label}" contains a period`);
    if (label.includes(":")) throw new InvalidNamespaceError(`${what}: label "${label}" contains a colon`);
    if (label.includes("\0")) throw new InvalidNamespaceError(`${what}: a label contains a NUL character`);
    if (!label.isWellFormed()) throw new InvalidNamespaceError(`${what}: a label contains a lone surrogate`);
  }
  if (namespace[0] === "langgraph" && !rules.allowReservedRoot) {
    throw new InvalidNamespaceError(`${what}: the root label "langgraph" is reserved`);
  }
  return namespace as string[];
}

export const encodePath = (namespace: readonly string[]): string => namespace.join(SEPARATOR);

export const decodePath = (path: string): string[] => path.split(SEPARATOR);

/**
 * The items whose namespace is `prefix` or starts with its labels: true for every row
 * when it is empty. One range of the primary key: [P, P + "/") holds P, its
 * descendants, and paths that extend P's last label with a byte below "." ("acme-corp"),
 * which the second condition drops.
 */
export function underPrefix(store: StoreDialect, prefix: readonly string[]): SQL | undefined {
  if (prefix.length === 0) return undefined;
  const path = encodePath(prefix);
  const c = store.columns;
  const p = store.text(path);
  return sql`(${c.nsPath} >= ${p} and ${c.nsPath} < ${store.text(path + AFTER_SEPARATOR)} and (${c.nsPath} = ${p} or ${c.nsPath} >= ${store.text(path + SEPARATOR)}))`;
}

/** Code point order (UTF-8 byte order), the order the path columns keep. */
export function comparePaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** A `listNamespaces` condition: `*` matches any one label. */
export interface MatchCondition {
  matchType: "prefix" | "suffix";
  path: string[];
}

export function matches(condition: MatchCondition, namespace: readonly string[]): boolean {
  const { path } = condition;
  if (path.length > namespace.length) return false;
  const start = condition.matchType === "prefix" ? 0 : namespace.length - path.length;
  return path.every((label, i) => label === "*" || label === namespace[start + i]);
}

/** The labels of a prefix condition before its first wildcard: what SQL can narrow by range. */
export function literalPrefix(conditions: readonly MatchCondition[]): string[] {
  const prefix = conditions.find((condition) => condition.matchType === "prefix");
  if (!prefix) return [];
  const wildcard = prefix.path.indexOf("*");
  return wildcard < 0 ? prefix.path : prefix.path.slice(0, wildcard);
}
