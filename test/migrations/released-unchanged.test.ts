// The shipped migrations as released: a database records each applied migration by its
// journal timestamp (src/savers/migrations/migrate.ts), and on MySQL a killed run resumes
// by statement number, so a released migration that is edited, renumbered or regenerated
// (a new timestamp) would be applied again, or resumed at the wrong statement, on every
// database that already has it. A schema change is a new migration (CONTRIBUTING.md);
// add its line here once it is on main.
import { readFileSync } from "node:fs";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { describe, expect, it } from "vitest";

/** Tag, journal timestamp and the first 16 hex digits of the SHA-256 of its SQL, in journal order. */
const RELEASED: Record<"pg" | "mysql" | "sqlite", [string, number, string][]> = {
  pg: [
    ["0000_init", 1795309048203, "03e2ae1d661e9070"],
    ["0001_metadata_index_without_pending_list", 1795316961574, "9d5a061434d7ec9c"],
    ["0002_thread_table", 1795344215576, "47e406f6be463255"],
    ["0003_incremental_values", 1795346403774, "dfe16e4d66955159"],
    ["0004_store_items", 1795626541131, "676004faa5f1b2bf"],
    ["0005_drop_thread_created_at_index", 1795760150172, "e8cd07954d70dc21"],
  ],
  mysql: [
    ["0000_init", 1795309050335, "5755a37e1cd8baad"],
    ["0001_text_charsets_and_epoch_times", 1795333162290, "9dbc8272a2caf85a"],
    ["0002_thread_table", 1795344217203, "9259a231a2933b64"],
    ["0003_incremental_values", 1795346404450, "f0f63aa772cc3cd5"],
    ["0004_metadata_index", 1795347487148, "938ca40cbad633c5"],
    ["0005_store_items", 1795626547353, "b20532ace2b1ce8b"],
    ["0006_stored_thread_user_id", 1795694363204, "b84edbbeb8ad1102"],
    ["0007_drop_thread_created_at_index", 1795760150717, "b07220d968b85e08"],
  ],
  sqlite: [
    ["0000_init", 1795309052281, "248443fda6bb157f"],
    ["0001_thread_table", 1795344218428, "d4a2fc844ea99d7d"],
    ["0002_incremental_values", 1795346405150, "cf8dc78647d203c9"],
    ["0003_store_items", 1795626553258, "cda2032fd8abf4c8"],
    ["0004_partial_metadata_indexes", 1795672523855, "700ae51535d91d4d"],
    ["0005_drop_thread_created_at_index", 1795760151232, "0e9f19c4dca328e8"],
  ],
};

describe.each(Object.entries(RELEASED))("the released %s migrations", (dialect, released) => {
  it("are unchanged, in their order, with nothing removed", () => {
    const folder = `migrations/${dialect}`;
    const journal = JSON.parse(readFileSync(`${folder}/meta/_journal.json`, "utf8")) as {
      entries: { tag: string; when: number }[];
    };
    const migrations = readMigrationFiles({ migrationsFolder: folder });
    const shipped = journal.entries.map((entry, i): [string, number, string] => [
      entry.tag,
      entry.when,
      migrations[i].hash.slice(0, 16),
    ]);
    expect(shipped.slice(0, released.length)).toEqual(released);
  });
});
