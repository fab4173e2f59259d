/**
 * The `status` command: applied and pending migrations, row counts and table sizes; with
 * --check, a CI gate that fails while a migration is pending.
 */
import type { DrizzleSaver, TableStats } from "../../index.js";
import { customTablesExist, missingCustomTables, withSaver } from "../database.js";
import { CliError, redactUrl } from "../errors.js";
import { type Layout, resolveLayout } from "../layout.js";
import { cell, formatBytes, type Output, plural, printTable } from "../output.js";
import { describeStatus } from "./encryption.js";

export interface StatusOptions {
  json?: boolean;
  /** Exit 1 when a migration is pending (or, for the application's tables, when they are missing). */
  check?: boolean;
  layout?: Layout;
}

export async function status(url: string, options: StatusOptions, out: Output): Promise<void> {
  const layout = options.layout ?? resolveLayout(url, {});
  await withSaver(url, { readOnly: true, layout, io: out.io }, async (saver) => {
    if (layout.custom) {
      await customStatus(saver, url, layout, options, out);
      return;
    }
    const { applied, pending } = await saver.migrationStatus();
    // Before the first migration there are no tables to measure.
    const tables = applied.length > 0 ? await saver.storageStats() : [];
    const encryption = applied.length > 0 ? await saver.encryptionStatus() : undefined;
    const migration = (state: string) => (m: { tag: string; createdAt: number }) => ({
      tag: m.tag,
      state,
      createdAt: m.createdAt,
      created: new Date(m.createdAt).toISOString(),
    });
    const migrations = [...applied.map(migration("applied")), ...pending.map(migration("pending"))];
    if (options.json) {
      await out.json({ url: redactUrl(url), migrations, tables, ...(encryption ? { encryption } : {}) });
    } else {
      await out.line(`database    ${redactUrl(url)}`);
      await out.line(`migrations  ${applied.length} applied, ${pending.length} pending`);
      await out.line();
      await printTable(
        out,
        [{ header: "MIGRATION" }, { header: "STATE" }, { header: "CREATED" }],
        migrations.map((m) => [m.tag, m.state, m.created]),
        "  ",
      );
      await out.line();
      if (applied.length === 0) await out.line("no checkpoint tables yet: run the migrate command");
      else {
        await printTableStats(out, tables);
        // Values per key id (rekey moves them to the active key) and in the clear.
        if (encryption) await out.line(`\nsealed values  ${describeStatus(encryption)}`);
        if (encryption?.store) await out.line(`store items    ${describeStatus(encryption.store)}`);
      }
    }
    if (options.check && pending.length > 0) {
      throw new CliError(`${plural(pending.length, "pending migration")}: run the migrate command`);
    }
  });
}

async function printTableStats(out: Output, tables: TableStats[]): Promise<void> {
  await printTable(
    out,
    [{ header: "TABLE" }, { header: "ROWS", align: "right" }, { header: "SIZE", align: "right" }],
    tables.map((t) => [cell(t.table), String(t.rows), formatBytes(t.bytes)]),
    "  ",
  );
}

/** Tables with a prefix: the application migrates them, so only their existence and size are known. */
async function customStatus(
  saver: DrizzleSaver,
  url: string,
  layout: Layout,
  options: StatusOptions,
  out: Output,
): Promise<void> {
  const exists = await customTablesExist(saver);
  const tables = exists ? await saver.storageStats() : [];
  if (options.json) {
    // No migrations of ours apply: the application records its own.
    await out.json({
      url: redactUrl(url),
      layout: "application",
      tableNames: layout.tables,
      exists,
      migrations: [],
      tables,
    });
  } else {
    await out.line(`database    ${redactUrl(url)}`);
    await out.line(`tables      ${layout.tables.join(", ")}`);
    await out.line("migrations  the application's own (tables with a prefix)");
    await out.line();
    if (exists) await printTableStats(out, tables);
    else await out.line("the tables do not exist yet: the application's drizzle-kit migrations create them");
  }
  if (options.check && !exists) throw missingCustomTables(layout);
}
