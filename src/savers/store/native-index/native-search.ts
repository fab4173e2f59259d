/**
 * Semantic search through the database's native vector index (`index.native`): the item
 * vectors mirrored into the index's side table in the batch's own transaction (a re-put
 * replaces them, a delete and the sweeper remove them), and a search that asks the index
 * for candidates and still returns complete pages:
 *
 * - a prefix and filter leaving fewer than `exactBelow` items with vectors (counted with a
 *   bound), or a page deeper than the index serves (offset + limit above its k), is
 *   searched exactly (vectors.ts);
 * - otherwise the k nearest vectors (k at least 4 x (offset + limit)) are joined to the
 *   items, with prefix, filter and expiry in the same SQL; the items that pass are scored
 *   exactly (cosine, the exact search's scale) and paged. When fewer than offset + limit
 *   pass, k grows fourfold and the index is asked again, up to its largest k; then the
 *   search is exact. A page is never short or cut by the index's top-k.
 */
import type { SearchItem } from "@langchain/langgraph-checkpoint";
import type { ItemKey, StoreDialect } from "../../../dialects/store-dialect.js";
import type { VectorIndex, VectorRow } from "../../../dialects/store-vectors.js";
import { MissingPackageError, VectorIndexError } from "../../../errors.js";
import type { Row, Runner } from "../../../sql/executor.js";
import type { Statement } from "../../../sql/statements.js";
import type { SearchPlan } from "../operations.js";
import { type PutRow, textOf } from "../statements.js";
import { rankPage } from "../vectors.js";
import type { NativeSettings } from "./options.js";
import { embeddedItemsStatement, itemExists, nearestItemsStatement, scoredCountStatement } from "./statements.js";

/** The vectors of stored embeddings (float32 little-endian, one after another). */
function vectorsOf(embeddings: unknown, dims: number): Float32Array[] {
  if (!(embeddings instanceof Uint8Array)) return [];
  const vectors: Float32Array[] = [];
  for (let offset = 0; offset + 4 * dims <= embeddings.byteLength; offset += 4 * dims) {
    // A copy: the bytes of a Buffer need not be aligned for a Float32Array.
    vectors.push(new Float32Array(Uint8Array.from(embeddings.subarray(offset, offset + 4 * dims)).buffer));
  }
  return vectors;
}

function vectorRows(item: ItemKey, embeddings: unknown, dims: number): VectorRow[] {
  return vectorsOf(embeddings, dims).map((vector, seq) => ({ ...item, seq, vector }));
}

export class NativeSearch {
  private state: Promise<boolean> | undefined;

  constructor(
    private readonly store: StoreDialect,
    private readonly index: VectorIndex,
    private readonly dims: number,
    private readonly settings: NativeSettings,
  ) {}

  /** Builds the index (filled from the items' embeddings when new); "if-available" accepts its absence. */
  async setup(): Promise<void> {
    const fill = async (runner: Runner) => {
      const rows = await runner.all(embeddedItemsStatement(this.store));
      const vectors = rows.flatMap((row) =>
        vectorRows({ path: textOf(row.ns_path), key: textOf(row.item_key) }, row.embeddings, this.dims),
      );
      for (const statement of this.index.insert(vectors)) await runner.run(statement);
    };
    try {
      await this.index.setup(this.dims, fill);
      this.state = Promise.resolve(true);
    } catch (error) {
      if (!this.unavailable(error)) throw error;
      this.state = Promise.resolve(false);
    }
  }

  /** An error saying the database or driver has no index, which "if-available" accepts (never a failure of the database). */
  private unavailable(error: unknown): boolean {
    return this.settings.ifAvailable && (error instanceof VectorIndexError || error instanceof MissingPackageError);
  }

  /** Whether the index is in use: it exists (checked once); asked for without "if-available", it must. */
  active(): Promise<boolean> {
    this.state ??= this.index.ready(this.dims).then(
      (exists) => {
        if (!exists && !this.settings.ifAvailable) {
          throw new VectorIndexError(`index.native: the ${this.index.kind} index does not exist yet: call setup()`);
        }
        return exists;
      },
      (error) => {
        if (this.unavailable(error)) return false;
        throw error;
      },
    );
    this.state.catch(() => {
      this.state = undefined; // asked again next time (setup() may have run meanwhile)
    });
    return this.state;
  }

  /** What a batch's puts and deletes change in the index: their old vectors out, the new ones in. */
  writes(rows: PutRow[]): Statement[] {
    const items = rows.map(({ plan }) => ({ path: plan.path, key: plan.key }));
    const vectors = rows.flatMap((row, i) => vectorRows(items[i], row.embeddings, this.dims));
    return [...this.index.remove(items), ...this.index.insert(vectors)];
  }

  /**
   * Removes expired items (`removes`, a sweep's statements) and, in the same unit, every vector
   * whose item is gone: theirs, and those of items removed without the index (the CLI's
   * sweep, a store without `index.native`). Returns how many items.
   */
  async sweep(removes: Statement[]): Promise<number> {
    const removed = await this.store.unit(async (tx) => {
      let items = 0;
      for (const remove of removes) items += await tx.run(remove);
      for (const statement of this.index.removeOrphans(itemExists(this.store))) await tx.run(statement);
      return items;
    }, []);
    return removed ?? 0;
  }

  /** A page through the index, or undefined when the exact search serves it (see the file's comment). */
  async search(
    runner: Runner,
    plan: SearchPlan,
    query: number[],
    now: number,
  ): Promise<{ rows: Row[]; items: SearchItem[] } | undefined> {
    const wanted = plan.offset + plan.limit;
    const { maxK } = this.index;
    if (wanted > maxK) return undefined;
    const { exactBelow } = this.settings;
    if (exactBelow > 0) {
      const [count] = await runner.all(scoredCountStatement(this.store, plan, now, exactBelow));
      if (Number(count?.n ?? 0) < exactBelow) return undefined;
    }
    const vector = Float32Array.from(query);
    for (let k = Math.min(maxK, Math.max(4 * wanted, 64)); ; k = Math.min(maxK, 4 * k)) {
      const nearest = this.index.nearest(vector, k);
      const rows = await this.index.searching(runner, k, (tx) =>
        tx.all(nearestItemsStatement(this.store, plan, now, nearest)),
      );
      if (rows.length >= wanted) return rankPage(rows, query, this.dims, plan.offset, plan.limit);
      if (k >= maxK) return undefined;
    }
  }
}
