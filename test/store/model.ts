/**
 * The reference model of the randomized store test: LangGraph's BaseStore contract as
 * DrizzleStore documents it, in plain maps (typed equality, ranges on numbers or on
 * strings by code points, a missing key satisfying only $ne/$nin/$exists:false,
 * whole-label prefixes, newest first then namespace and key by code points).
 */
type Value = Record<string, unknown>;

interface ModelItem {
  namespace: string[];
  key: string;
  value: Value;
  createdAt: number;
  updatedAt: number;
}

const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

function scalarEquals(actual: unknown, expected: unknown): boolean {
  return actual === expected && typeof actual === typeof expected;
}

function range(op: string, actual: unknown, operand: unknown): boolean {
  let c: number;
  if (typeof operand === "number" && typeof actual === "number") c = actual - operand;
  else if (typeof operand === "string" && typeof actual === "string") c = bytes(actual, operand);
  else return false;
  return op === "$gt" ? c > 0 : op === "$gte" ? c >= 0 : op === "$lt" ? c < 0 : c <= 0;
}

function condition(value: Value, key: string, cond: unknown): boolean {
  const present = Object.hasOwn(value, key);
  const actual = value[key];
  if (typeof cond !== "object" || cond === null) return present && scalarEquals(actual, cond);
  return Object.entries(cond).every(([op, operand]) => {
    switch (op) {
      case "$eq":
        return present && scalarEquals(actual, operand);
      case "$ne":
        return !(present && scalarEquals(actual, operand));
      case "$in":
        return present && (operand as unknown[]).some((o) => scalarEquals(actual, o));
      case "$nin":
        return !(present && (operand as unknown[]).some((o) => scalarEquals(actual, o)));
      case "$exists":
        return present === operand;
      default:
        return present && range(op, actual, operand);
    }
  });
}

const path = (namespace: string[]) => namespace.join(".");

function isPrefix(prefix: string[], namespace: string[]): boolean {
  return prefix.length <= namespace.length && prefix.every((label, i) => namespace[i] === label);
}

export class StoreModel {
  private items = new Map<string, ModelItem>();

  private id = (namespace: string[], key: string) => `${path(namespace)}\u0000${key}`;

  put(namespace: string[], key: string, value: Value | null, now: number): void {
    const id = this.id(namespace, key);
    if (value === null) {
      this.items.delete(id);
      return;
    }
    const createdAt = this.items.get(id)?.createdAt ?? now;
    this.items.set(id, { namespace, key, value: structuredClone(value), createdAt, updatedAt: now });
  }

  get(namespace: string[], key: string): ModelItem | null {
    return this.items.get(this.id(namespace, key)) ?? null;
  }

  search(prefix: string[], filter: Record<string, unknown>, limit: number, offset: number): ModelItem[] {
    return [...this.items.values()]
      .filter((item) => isPrefix(prefix, item.namespace))
      .filter((item) => Object.entries(filter).every(([key, cond]) => condition(item.value, key, cond)))
      .sort((a, b) => b.updatedAt - a.updatedAt || bytes(path(a.namespace), path(b.namespace)) || bytes(a.key, b.key))
      .slice(offset, offset + limit);
  }

  listNamespaces(options: { prefix?: string[]; suffix?: string[]; maxDepth?: number; limit: number; offset: number }) {
    const matchAt = (pattern: string[], ns: string[], start: number) =>
      pattern.every((label, i) => label === "*" || ns[start + i] === label);
    const found = new Map<string, string[]>();
    for (const { namespace } of this.items.values()) {
      if (options.prefix && !(options.prefix.length <= namespace.length && matchAt(options.prefix, namespace, 0)))
        continue;
      if (
        options.suffix &&
        !(
          options.suffix.length <= namespace.length &&
          matchAt(options.suffix, namespace, namespace.length - options.suffix.length)
        )
      )
        continue;
      const kept = options.maxDepth === undefined ? namespace : namespace.slice(0, options.maxDepth);
      found.set(path(kept), kept);
    }
    return [...found.entries()]
      .sort(([a], [b]) => bytes(a, b))
      .slice(options.offset, options.offset + options.limit)
      .map(([, ns]) => ns);
  }
}
