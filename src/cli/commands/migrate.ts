/**
 * The `migrate` command: applies the pending shipped migrations (on a Spider head, to its
 * data nodes too), lists them with --dry-run, and names the migration that failed.
 */
import { existsSync } from "node:fs";
import { databaseFamily } from "../../database-family.js";
import type { DrizzleSaver, MigrationInfo } from "../../index.js";
import { sqlitePath, withSaver } from "../database.js";
import { CliError, describeError, EXIT_FAILURE, UsageError } from "../errors.js";
import { type Layout, resolveLayout } from "../layout.js";
import { type Output, plural, printTable } from "../output.js";

export interface MigrateOptions {
  layout?: Layout;
  dryRun?: boolean;
  json?: boolean;
  /** Comma-separated data node URLs: the URL is a Spider head (see docs/sharding.md). */
  spiderShards?: string;
}

function migrationJson(migration: MigrationInfo) {
  return { tag: migration.tag, createdAt: migration.createdAt, created: new Date(migration.createdAt).toISOString() };
}

export async function migrate(url: string, options: MigrateOptions, out: Output): Promise<void> {
  const layout = options.layout ?? resolveLayout(url, {});
  if (layout.custom) {
    // As `setup()` with `tables`: the shipped migrations create only the default tables.
    throw new UsageError(
      "tables with a --table-prefix belong to the application, which creates and migrates them with " +
        "its own drizzle-kit migrations; migrate applies only the shipped migrations of the default tables",
    );
  }
  const path = sqlitePath(url);
  // A dry run on a SQLite file that does not exist yet must not create it: every migration is pending.
  const target = options.dryRun && path !== undefined && path !== ":memory:" && !existsSync(path) ? ":memory:" : url;

  const shards = options.spiderShards?.split(",").map((shard) => shard.trim());
  const saverOptions = shards ? { spider: { shards } } : {};
  await withSaver(target, { create: true, layout, saverOptions, io: out.io }, async (saver) => {
    const before = await saver.migrationStatus();
    if (options.dryRun) {
      if (options.json) {
        await out.json({ applied: before.applied.map(migrationJson), pending: before.pending.map(migrationJson) });
      } else if (before.pending.length === 0) {
        await out.line(
          `no pending migrations: the database is up to date (${plural(before.applied.length, "migration")})`,
        );
      } else {
        await out.line(`${plural(before.pending.length, "pending migration")} (not applied: dry run):`);
        await printTable(
          out,
          [{ header: "MIGRATION" }, { header: "CREATED" }],
          before.pending.map((m) => [m.tag, new Date(m.createdAt).toISOString()]),
          "  ",
        );
      }
      return;
    }

    let result: unknown;
    try {
      result = await saver.setup();
    } catch (error) {
      throw await migrationFailure(saver, url, before.pending, error);
    }
    const after = await saver.migrationStatus();
    if (after.pending.length > 0) {
      throw new CliError(`migrations still pending after migrate: ${after.pending.map((m) => m.tag).join(", ")}`);
    }
    const applied = new Set(after.applied.map((m) => m.createdAt));
    // What this run applied, when setup() says; otherwise what was pending before and is
    // applied now (by this run, or by a concurrent run it waited for).
    const newly = appliedByRun(result) ?? before.pending.filter((m) => applied.has(m.createdAt));
    if (options.json) {
      await out.json({ applied: newly.map(migrationJson), current: after.applied.map(migrationJson) });
      return;
    }
    for (const migration of newly) await out.line(`applied ${migration.tag}`);
    await out.line(`the database is up to date (${plural(after.applied.length, "migration")})`);
  });
}

/**
 * Names the migration that failed. The saver may say so itself (an error with a
 * `migration.tag`); otherwise it is the only one still pending, or on MySQL (each
 * migration is recorded as soon as it ran) the first one still pending.
 */
async function migrationFailure(
  saver: DrizzleSaver,
  url: string,
  pendingBefore: MigrationInfo[],
  error: unknown,
): Promise<CliError> {
  const reported = (error as { migration?: { tag?: unknown } } | null)?.migration?.tag;
  // A MigrationError names the migration itself; its cause is the database's error.
  const reason = describeError(typeof reported === "string" ? (error as Error).cause : error, [url]);
  if (typeof reported === "string")
    return new CliError(`migration ${reported} failed: ${reason}`, EXIT_FAILURE, { cause: error });
  let stillPending = pendingBefore;
  try {
    const pending = new Set((await saver.migrationStatus()).pending.map((m) => m.createdAt));
    stillPending = pendingBefore.filter((m) => pending.has(m.createdAt));
  } catch {
    // The status cannot be read (the connection is gone): keep what was pending before.
  }
  const oneAtATime = databaseFamily(url) === "mysql";
  if (stillPending.length === 1 || (oneAtATime && stillPending.length > 0)) {
    return new CliError(`migration ${stillPending[0].tag} failed: ${reason}`, EXIT_FAILURE, { cause: error });
  }
  if (stillPending.length > 1) {
    return new CliError(
      `migration failed (rolled back; one of ${stillPending.map((m) => m.tag).join(", ")}): ${reason}`,
      EXIT_FAILURE,
      { cause: error },
    );
  }
  return new CliError(`migration failed: ${reason}`, EXIT_FAILURE, { cause: error });
}

/** The migrations a `setup()` that returns them applied; undefined when it returns nothing. */
function appliedByRun(result: unknown): MigrationInfo[] | undefined {
  if (!Array.isArray(result)) return undefined;
  const valid = result.every(
    (m: unknown) =>
      m !== null &&
      typeof m === "object" &&
      typeof (m as MigrationInfo).tag === "string" &&
      typeof (m as MigrationInfo).createdAt === "number",
  );
  return valid ? (result as MigrationInfo[]) : undefined;
}
