/**
 * Semantic search without a vector index, on every database: a put's texts (the index
 * fields of its value) are embedded and kept with the item as float32 bytes; a search
 * with a query reads the items its namespace prefix and filter leave (in SQL), scores
 * each by its best cosine similarity to the query here, highest first, items without
 * vectors after them, and only then applies offset and limit, so deep pages are exact.
 */
import type { Embeddings } from "@langchain/core/embeddings";
import { getTextAtPath, type SearchItem } from "@langchain/langgraph-checkpoint";
import { describeValue, InvalidInputError, SerializationError } from "../../errors.js";
import { optionKeys, requireKnownNestedOptions } from "../../known-options.js";
import type { Row } from "../../sql/executor.js";
import { comparePaths } from "./namespaces.js";
import { nativeSettingsOf, type StoreNativeIndex } from "./native-index/options.js";
import type { PutPlan } from "./operations.js";
import { itemOf, textOf } from "./statements.js";

/** Turns texts into vectors: LangChain `Embeddings`, or a function. */
export type EmbedFunction = (texts: string[]) => Promise<number[][]>;

export interface StoreIndexOptions {
  /** Dimensions of every vector; a vector of another size is an error. */
  dims: number;
  /** The model: LangChain `Embeddings` or a function of texts to vectors. */
  embeddings?: Embeddings | EmbedFunction;
  /** The same as `embeddings` as a function (as `PostgresStore` accepts it). */
  embed?: EmbedFunction;
  /** Paths in a value whose text is embedded ("$": the whole value); default ["$"]. */
  fields?: string[];
  /**
   * Search through the database's native vector index (approximate: pgvector, libSQL's
   * vector index, sqlite-vec) instead of the exact search; see docs/store.md. `true`
   * requires it (a `VectorIndexError` where there is none), `"if-available"` uses it where
   * there is one. Default: the exact search everywhere.
   */
  native?: StoreNativeIndex;
}

export interface Embedder {
  dims: number;
  fields: string[];
  documents(texts: string[]): Promise<number[][]>;
  query(text: string): Promise<number[]>;
}

const INDEX_OPTION_KEYS = optionKeys<StoreIndexOptions>({
  dims: true,
  embeddings: true,
  embed: true,
  fields: true,
  native: true,
});

/** The `index` option's embedder, the option checked whole (its keys, `native` too) before anything is opened. */
export function embedderOf(index: StoreIndexOptions | undefined): Embedder | undefined {
  if (index === undefined) return undefined;
  requireKnownNestedOptions(index, "index", INDEX_OPTION_KEYS);
  nativeSettingsOf(index.native);
  if (!Number.isSafeInteger(index.dims) || index.dims < 1) {
    throw new InvalidInputError(`index.dims must be a positive integer, got ${String(index.dims)}`);
  }
  const model = index.embed ?? index.embeddings;
  let documents: (texts: string[]) => Promise<number[][]>;
  let query: (text: string) => Promise<number[]>;
  if (typeof model === "function") {
    documents = model;
    query = async (text) => (await model([text]))[0];
  } else if (model && typeof model.embedDocuments === "function" && typeof model.embedQuery === "function") {
    documents = (texts) => model.embedDocuments(texts);
    query = (text) => model.embedQuery(text);
  } else {
    throw new InvalidInputError(
      `index needs embeddings (LangChain Embeddings or a function), got ${describeValue(model)}`,
    );
  }
  const fields = index.fields ?? ["$"];
  if (!Array.isArray(fields) || !fields.every((field) => typeof field === "string")) {
    throw new InvalidInputError("index.fields must be an array of paths");
  }
  return { dims: index.dims, fields, documents, query };
}

function checkVector(vector: unknown, dims: number, what: string): number[] {
  if (
    !Array.isArray(vector) ||
    vector.length !== dims ||
    !vector.every((x) => typeof x === "number" && Number.isFinite(x))
  ) {
    const size = Array.isArray(vector) ? `${vector.length} numbers` : describeValue(vector);
    throw new InvalidInputError(`the embedding of ${what} must be ${dims} finite numbers, got ${size}`);
  }
  return vector;
}

function textsOf(plan: PutPlan, fields: string[]): string[] {
  if (plan.value === null || plan.index === false) return [];
  return (plan.index ?? fields).flatMap((field) =>
    field === "$" ? [JSON.stringify(plan.value)] : getTextAtPath(plan.value, field),
  );
}

/** The embeddings of each put (float32, one vector after another), null without texts; in one call to the model. */
export async function embedPuts(embedder: Embedder, puts: PutPlan[]): Promise<(Buffer | null)[]> {
  const texts = puts.map((plan) => textsOf(plan, embedder.fields));
  const all = texts.flat();
  if (all.length === 0) return puts.map(() => null);
  const vectors = await embedder.documents(all);
  if (!Array.isArray(vectors) || vectors.length !== all.length) {
    throw new InvalidInputError(
      `the embeddings model returned ${Array.isArray(vectors) ? vectors.length : 0} vectors for ${all.length} texts`,
    );
  }
  let next = 0;
  return texts.map((own, i) => {
    if (own.length === 0) return null;
    const floats = new Float32Array(own.length * embedder.dims);
    for (let k = 0; k < own.length; k++) {
      floats.set(checkVector(vectors[next++], embedder.dims, `"${puts[i].key}"`), k * embedder.dims);
    }
    return Buffer.from(floats.buffer);
  });
}

export async function embedQuery(embedder: Embedder, query: string): Promise<number[]> {
  return checkVector(await embedder.query(query), embedder.dims, "the query");
}

/** The best cosine similarity of the query to any of the item's vectors; undefined without vectors. */
function bestScore(query: number[], queryNorm: number, stored: unknown, dims: number): number | undefined {
  if (stored === null || stored === undefined) return undefined;
  const bytes =
    stored instanceof Uint8Array ? stored : stored instanceof ArrayBuffer ? new Uint8Array(stored) : undefined;
  if (!bytes || bytes.byteLength % (4 * dims) !== 0) {
    throw new SerializationError(`stored embeddings do not hold vectors of ${dims} dimensions`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let best: number | undefined;
  for (let offset = 0; offset < bytes.byteLength; offset += 4 * dims) {
    let dot = 0;
    let norm = 0;
    for (let i = 0; i < dims; i++) {
      const x = view.getFloat32(offset + 4 * i, true);
      dot += x * query[i];
      norm += x * x;
    }
    const score = norm === 0 || queryNorm === 0 ? 0 : dot / Math.sqrt(norm * queryNorm);
    if (best === undefined || score > best) best = score;
  }
  return best;
}

/**
 * A page of the candidates (rows of every item the prefix and filter leave, newest first
 * as the statement orders them) by score: highest first, ties by namespace and key; then
 * the items without vectors in their order.
 */
export function rankPage(
  rows: Row[],
  query: number[],
  dims: number,
  offset: number,
  limit: number,
): { rows: Row[]; items: SearchItem[] } {
  const queryNorm = query.reduce((sum, x) => sum + x * x, 0);
  const scored: { row: Row; score: number }[] = [];
  const unscored: Row[] = [];
  for (const row of rows) {
    const score = bestScore(query, queryNorm, row.embeddings, dims);
    if (score === undefined) unscored.push(row);
    else scored.push({ row, score });
  }
  scored.sort(
    (a, b) =>
      b.score - a.score ||
      comparePaths(textOf(a.row.ns_path), textOf(b.row.ns_path)) ||
      comparePaths(textOf(a.row.item_key), textOf(b.row.item_key)),
  );
  const ranked = [...scored, ...unscored.map((row) => ({ row, score: undefined }))].slice(offset, offset + limit);
  return {
    rows: ranked.map(({ row }) => row),
    items: ranked.map(({ row, score }) => ({ ...itemOf(row), ...(score !== undefined && { score }) })),
  };
}
