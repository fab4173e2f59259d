/**
 * The reads of a store batch: get, search (by filter, or ranked by a query's vector,
 * through the native index when it serves the page) and listNamespaces, each on the
 * batch's runner so they see the state before its writes.
 */
import type { SearchItem } from "@langchain/langgraph-checkpoint";
import type { ItemKey, StoreDialect } from "../../dialects/store-dialect.js";
import type { Row, Runner } from "../../sql/executor.js";
import { comparePaths, decodePath, encodePath, literalPrefix, matches } from "./namespaces.js";
import type { NativeSearch } from "./native-index/native-search.js";
import type { ListPlan, Plan, SearchPlan } from "./operations.js";
import type { ItemSealing } from "./sealed-items.js";
import {
  candidatesStatement,
  getStatement,
  itemOf,
  namespacesStatement,
  searchStatement,
  textOf,
} from "./statements.js";
import { type Embedder, rankPage } from "./vectors.js";

/** Items a batch read that have a ttl to renew. */
export type Refresh = ItemKey[];

/** Runs a batch's read operations. */
export class StoreReader {
  constructor(
    private readonly store: StoreDialect,
    private readonly sealing: ItemSealing,
    private readonly embedder: Embedder | undefined,
    /** The native vector index (`index.native`), undefined for the exact search. */
    private readonly native: NativeSearch | undefined,
    /** The store's `ttl.refreshOnRead`. */
    private readonly refreshOnRead: boolean | undefined,
  ) {}

  private refreshes(plan: { refreshTtl?: boolean }): boolean {
    return plan.refreshTtl ?? this.refreshOnRead ?? true;
  }

  async read(
    runner: Runner,
    plan: Plan,
    now: number,
    refresh: Refresh,
    queries: Map<string, number[]>,
  ): Promise<unknown> {
    switch (plan.kind) {
      case "put":
        return undefined;
      case "get": {
        const [row] = await runner.all(getStatement(this.store, plan, now));
        if (row && row.ttl_minutes !== null && this.refreshes(plan)) refresh.push({ path: plan.path, key: plan.key });
        return row ? itemOf(this.sealing.open(row)) : null;
      }
      case "search": {
        if (plan.limit === 0) return [];
        const vector = plan.query === undefined ? undefined : queries.get(plan.query);
        let rows: Row[];
        let items: SearchItem[];
        if (vector && this.embedder) ({ rows, items } = await this.queryPage(runner, plan, vector, this.embedder, now));
        else {
          rows = await this.searchRows(runner, plan, now, false);
          items = rows.map(itemOf);
        }
        if (this.refreshes(plan)) {
          for (const row of rows) {
            if (row.ttl_minutes !== null) refresh.push({ path: textOf(row.ns_path), key: textOf(row.item_key) });
          }
        }
        return items;
      }
      case "list":
        return this.runList(runner, plan, now);
    }
  }

  /** A page of a search with a query: through the native index when it serves it, else exact. */
  private async queryPage(runner: Runner, plan: SearchPlan, vector: number[], embedder: Embedder, now: number) {
    const page = (await this.native?.active()) ? await this.native?.search(runner, plan, vector, now) : undefined;
    if (page) return page;
    const candidates = await this.searchRows(runner, plan, now, true);
    return rankPage(candidates, vector, embedder.dims, plan.offset, plan.limit);
  }

  /**
   * A search's rows: a page from SQL, or every candidate for a query. With encryption SQL
   * cannot read the values: every item under the prefix is opened and filtered here,
   * before the page is cut, so pages stay exact.
   */
  private async searchRows(runner: Runner, plan: SearchPlan, now: number, ranked: boolean): Promise<Row[]> {
    if (!this.sealing.sealer) {
      const rows = await runner.all((ranked ? candidatesStatement : searchStatement)(this.store, plan, now));
      return rows.map((row) => this.sealing.open(row));
    }
    const rows = this.sealing.openMatching(
      await runner.all(candidatesStatement(this.store, plan, now, false)),
      plan.filter,
    );
    return ranked ? rows : rows.slice(plan.offset, plan.offset + plan.limit);
  }

  /**
   * The distinct paths under the conditions' literal prefix come from the primary key
   * (never from items outside it); wildcards, suffixes and maxDepth apply to those.
   */
  private async runList(runner: Runner, plan: ListPlan, now: number): Promise<string[][]> {
    const rows = await runner.all(namespacesStatement(this.store, literalPrefix(plan.conditions), now));
    const found = new Map<string, string[]>();
    for (const row of rows) {
      let namespace = decodePath(textOf(row.ns_path));
      if (!plan.conditions.every((condition) => matches(condition, namespace))) continue;
      if (plan.maxDepth !== undefined) namespace = namespace.slice(0, plan.maxDepth);
      found.set(encodePath(namespace), namespace);
    }
    return [...found.entries()]
      .sort(([a], [b]) => comparePaths(a, b))
      .slice(plan.offset, plan.offset + plan.limit)
      .map(([, namespace]) => namespace);
  }
}
