import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { metadataIndexBackfill, metadataIndexTriggers } from "../../src/dialects/mysql-metadata-index.js";

/** The hand-written part of the MySQL migration is the SQL the module builds (for reuse on other tables). */
describe("MySQL metadata index migration", () => {
  it("holds the triggers and backfill of src/dialects/mysql-metadata-index.ts for the checkpoints table", () => {
    const migration = readFileSync("migrations/mysql/0004_metadata_index.sql", "utf8");
    const statements = migration.split("--> statement-breakpoint").map((s) =>
      s
        .split("\n")
        .filter((line) => !line.startsWith("--"))
        .join("\n")
        .trim()
        .replace(/;$/, ""),
    );
    const names = { table: "checkpoints", side: "checkpoint_metadata", idColumn: "checkpoint_id" };
    for (const ddl of [...metadataIndexTriggers(names), metadataIndexBackfill(names)]) {
      expect(statements).toContain(ddl);
    }
  });
});
