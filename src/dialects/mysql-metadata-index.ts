/**
 * An index-backed metadata filter for MySQL and MariaDB, for any table with a JSON
 * metadata column keyed by (thread_id, ns_hash, <id>). MariaDB has no multi-valued
 * (or functional) index, so an inverted index is kept in a side table (see
 * `metadataIndexTable` in the schema): one row per top-level key whose value is a
 * scalar, holding hashes of the key and of the value (plus numbers as numbers).
 * Triggers on the owning table keep it, so every path that writes or deletes rows
 * (put, copy, prune, import, a delete by hand) keeps it exact in the same transaction.
 * A filter then narrows with the side table and still tests the JSON itself exactly.
 */
import { createHash } from "node:crypto";
import { type Column, type SQL, sql } from "drizzle-orm";
import type { MySqlMetadataIndexTable } from "../schema/mysql.js";
import type { JsonValue } from "../sql/json.js";

/** Keys with generated, indexed columns on the checkpoints table: never in the side table. */
const GENERATED_KEYS = ["source", "step", "run_id"];

const sha256 = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

/** The value_hash of a scalar; the triggers compute the same in SQL. */
function valueHash(value: string | number | boolean | null): Buffer {
  if (value === null) return sha256("z");
  if (typeof value === "string") return sha256(`s${value}`);
  if (typeof value === "boolean") return sha256(`b${value}`);
  return sha256("n");
}

/** The owning table's key columns, compared with the side table's. */
export interface IndexedRowKey {
  threadId: Column;
  nsHash: Column;
  checkpointId: Column;
}

/**
 * A predicate on the owning table: rows whose metadata has `key` equal to a scalar
 * `value` are among those the side table lists. Undefined for a value it does not
 * index (objects, arrays) and for the keys with generated columns.
 */
export function indexedMetadataCandidates(
  side: MySqlMetadataIndexTable,
  owner: IndexedRowKey,
  key: string,
  value: JsonValue,
): SQL | undefined {
  if (GENERATED_KEYS.includes(key) || (typeof value === "object" && value !== null)) return undefined;
  const number = typeof value === "number" ? sql` and ${side.valueNumber} = ${value}` : sql``;
  return sql`(${owner.threadId}, ${owner.nsHash}, ${owner.checkpointId}) in (select ${side.threadId}, ${side.nsHash}, ${side.checkpointId} from ${side} where ${side.keyHash} = ${sha256(key)} and ${side.valueHash} = ${valueHash(value)}${number})`;
}

/** The owner's key columns in the triggers; the side table's are thread_id, ns_hash, checkpoint_id. */
export interface MetadataIndexNames {
  /** The table with the metadata column, e.g. "checkpoints". */
  table: string;
  /** Its side table, e.g. "checkpoint_metadata". */
  side: string;
  /** The owner's id column stored as the side table's checkpoint_id. */
  idColumn: string;
}

const NUMBER_TYPES = "'INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL'";

/**
 * The side rows of one row of the owner (`row` is NEW in a trigger, or a table alias
 * after `from`). Keys go through JSON_TABLE over JSON_KEYS (no LATERAL: MariaDB has
 * none, but JSON_TABLE may read the tables before it) and are compared as bytes (a
 * collation would take "Source" or "source " for "source"); the value hash matches
 * {@link valueHash}.
 */
function sideRowsInsert(names: MetadataIndexNames, row: string, from = ""): string {
  const generated = GENERATED_KEYS.map((key) => `'${key}'`).join(", ");
  const v = `json_extract(${row}.\`metadata\`, concat('$.', json_quote(j.k)))`;
  return `INSERT INTO \`${names.side}\` (\`thread_id\`, \`ns_hash\`, \`checkpoint_id\`, \`key_hash\`, \`value_hash\`, \`value_number\`)
  SELECT ${row}.\`thread_id\`, ${row}.\`ns_hash\`, ${row}.\`${names.idColumn}\`, unhex(sha2(j.k, 256)),
    CASE json_type(${v})
      WHEN 'STRING' THEN unhex(sha2(concat('s', json_unquote(${v})), 256))
      WHEN 'BOOLEAN' THEN unhex(sha2(concat('b', ${v}), 256))
      WHEN 'NULL' THEN unhex(sha2('z', 256))
      ELSE unhex(sha2('n', 256))
    END,
    CASE WHEN json_type(${v}) IN (${NUMBER_TYPES}) THEN ${v} + 0 END
  FROM ${from}JSON_TABLE(json_keys(${row}.\`metadata\`), '$[*]' COLUMNS (k TEXT CHARACTER SET utf8mb4 PATH '$')) AS j
  WHERE cast(j.k AS binary) NOT IN (${generated})
    AND json_type(${v}) IN ('STRING', 'BOOLEAN', 'NULL', ${NUMBER_TYPES})`;
}

function deleteSideRows(names: MetadataIndexNames): string {
  return `DELETE FROM \`${names.side}\` WHERE \`thread_id\` = OLD.\`thread_id\` AND \`ns_hash\` = OLD.\`ns_hash\` AND \`checkpoint_id\` = OLD.\`${names.idColumn}\``;
}

/**
 * The triggers that keep the side table, one DDL statement each (no DELIMITER needed:
 * every statement is sent on its own). Creating triggers needs the TRIGGER privilege,
 * and with binary logging on, SUPER or log_bin_trust_function_creators=1.
 */
export function metadataIndexTriggers(names: MetadataIndexNames): string[] {
  const changed = ["thread_id", "ns_hash", names.idColumn, "metadata"]
    .map((column) => `NOT (OLD.\`${column}\` <=> NEW.\`${column}\`)`)
    .join(" OR ");
  return [
    `CREATE TRIGGER \`${names.table}_metadata_insert\` AFTER INSERT ON \`${names.table}\` FOR EACH ROW\n${sideRowsInsert(names, "NEW")}`,
    `CREATE TRIGGER \`${names.table}_metadata_update\` AFTER UPDATE ON \`${names.table}\` FOR EACH ROW\nBEGIN\n  IF ${changed} THEN\n    ${deleteSideRows(names)};\n    ${sideRowsInsert(names, "NEW")};\n  END IF;\nEND`,
    `CREATE TRIGGER \`${names.table}_metadata_delete\` AFTER DELETE ON \`${names.table}\` FOR EACH ROW\n${deleteSideRows(names)}`,
  ];
}

/**
 * Fills the side table for rows written before the triggers existed. Runs after them,
 * so rows written meanwhile are already there: it overwrites them with the same values.
 */
export function metadataIndexBackfill(names: MetadataIndexNames): string {
  const update = "`value_hash` = values(`value_hash`), `value_number` = values(`value_number`)";
  return `${sideRowsInsert(names, "o", `\`${names.table}\` AS o, `)}\n  ON DUPLICATE KEY UPDATE ${update}`;
}
