/**
 * The statements of a search through a native vector index (native-search.ts): how many
 * items with vectors the prefix and filter leave (up to a bound), and the items among the
 * k nearest vectors that pass them, with their embeddings to score exactly.
 */
import { type SQL, sql } from "drizzle-orm";
import type { StoreDialect } from "../../../dialects/store-dialect.js";
import type { ItemExists } from "../../../dialects/store-vectors.js";
import type { SearchPlan } from "../operations.js";
import { itemColumns, searchWhere } from "../statements.js";

/** How many items with vectors pass the prefix and filter, counting no further than `bound`. */
export function scoredCountStatement(store: StoreDialect, plan: SearchPlan, now: number, bound: number): SQL {
  const c = store.columns;
  return sql`select count(*) as ${sql.identifier("n")} from (select 1 as one from ${c.table}
    where ${searchWhere(store, plan, now)} and ${c.embeddings} is not null limit ${bound}) as bounded`;
}

/** The items (with embeddings) that own one of the vectors `nearest` selects and pass the prefix and filter. */
export function nearestItemsStatement(store: StoreDialect, plan: SearchPlan, now: number, nearest: SQL): SQL {
  const c = store.columns;
  return sql`select ${itemColumns(store, true)} from ${c.table}
    where (${c.nsPath}, ${c.key}) in (${nearest}) and ${searchWhere(store, plan, now)}`;
}

/** Every item with embeddings: what a new index is filled from. */
export function embeddedItemsStatement(store: StoreDialect): SQL {
  const c = store.columns;
  return sql`select ${c.nsPath} as ${sql.identifier("ns_path")}, ${c.key} as ${sql.identifier("item_key")},
    ${c.embeddings} as ${sql.identifier("embeddings")} from ${c.table} where ${c.embeddings} is not null`;
}

/** "An item with this path and key exists" (expired or not), for the index's side table. */
export function itemExists(store: StoreDialect): ItemExists {
  const c = store.columns;
  return (path, key) => sql`exists (select 1 from ${c.table} where ${c.nsPath} = ${path} and ${c.key} = ${key})`;
}
