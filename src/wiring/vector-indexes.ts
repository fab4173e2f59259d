/**
 * Which native vector index serves a store (`index.native`): pgvector on every PostgreSQL
 * driver (the server's extension, or PGlite's), libSQL's own index on @libsql/client,
 * sqlite-vec on better-sqlite3; none on MySQL/MariaDB and Cloudflare D1.
 */
import type { PgTable } from "drizzle-orm/pg-core";
import { pgVectorIndex } from "../dialects/pg-vectors.js";
import { libsqlVectorIndex, sqliteVecIndex } from "../dialects/sqlite-vectors.js";
import type { VectorIndex } from "../dialects/store-vectors.js";
import { MissingPackageError, VectorIndexError } from "../errors.js";
import type { Executor } from "../sql/executor.js";
import type { ResolvedStore } from "./registry.js";

const SQLITE_VEC = "sqlite-vec";

/** Loads sqlite-vec into the better-sqlite3 connection once; its package is an optional peer dependency. */
function sqliteVecLoader(executor: Executor): () => Promise<void> {
  let loaded: Promise<void> | undefined;
  return () => {
    loaded ??= (async () => {
      let path: string;
      try {
        const module = (await import(SQLITE_VEC)) as { getLoadablePath(): string };
        path = module.getLoadablePath();
      } catch (error) {
        throw new MissingPackageError(
          `index.native on better-sqlite3 needs sqlite-vec and its binary for this platform: npm install ${SQLITE_VEC}`,
          [SQLITE_VEC],
          { cause: error },
        );
      }
      executor.loadExtension?.(path);
    })();
    loaded.catch(() => {
      loaded = undefined; // a later call tries again (the package installed meanwhile)
    });
    return loaded;
  };
}

/**
 * The native vector index of this store's database and driver, or a `VectorIndexError`
 * naming why there is none. Touches nothing in the database.
 */
export function vectorIndexOf(resolved: ResolvedStore): VectorIndex | VectorIndexError {
  const { executor, columns } = resolved.store;
  if (resolved.migrations === "pg") return pgVectorIndex(executor, columns.table as PgTable);
  if (resolved.migrations === "sqlite") {
    if (executor.driver === "@libsql/client") return libsqlVectorIndex(executor, columns.table);
    if (executor.loadExtension) return sqliteVecIndex(executor, columns.table, sqliteVecLoader(executor));
    return new VectorIndexError(
      `index.native: ${executor.driver} has no native vector index (libSQL's own index and sqlite-vec on better-sqlite3 do); use the exact search or native: "if-available"`,
    );
  }
  return new VectorIndexError(
    `index.native: ${resolved.store.name} has no vector type (MariaDB 10.11, MySQL); use the exact search or native: "if-available"`,
  );
}
