/**
 * The layer check of `npm run lint` (.dependency-cruiser.cjs) on a copy of src/: it
 * passes as the code is, and fails on a deliberate upward import (a dialect importing a
 * driver, a driver importing the saver) and on a cycle.
 */
import { execFile } from "node:child_process";
import { appendFileSync, cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const copies: string[] = [];

afterAll(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});

/** A copy of src/ with the lint configuration, with `change` applied; the check's exit code and output. */
async function checkCopy(change: (dir: string) => void): Promise<{ code: number; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), "lgcd-layers-"));
  copies.push(dir);
  cpSync(join(root, "src"), join(dir, "src"), { recursive: true });
  for (const file of [".dependency-cruiser.cjs", "tsconfig.json"]) cpSync(join(root, file), join(dir, file));
  change(dir);
  const depcruise = join(root, "node_modules", ".bin", "depcruise");
  try {
    const { stdout } = await run(depcruise, ["src", "--config", ".dependency-cruiser.cjs"], { cwd: dir });
    return { code: 0, output: stdout };
  } catch (error) {
    const { code, stdout } = error as { code: number; stdout: string };
    return { code, output: stdout };
  }
}

/** depcruise parses every file with TypeScript: seconds on a quiet machine, more under load. */
const TIMEOUT = 180_000;

describe("the layer check", () => {
  it(
    "passes on the code as it is",
    async () => {
      const { code, output } = await checkCopy(() => {});
      expect(output).toContain("no dependency violations found");
      expect(code).toBe(0);
    },
    TIMEOUT,
  );

  it(
    "fails on a dialect importing a driver, a driver importing the saver, the saver importing a dialect, and a cycle",
    async () => {
      const { code, output } = await checkCopy((dir) => {
        appendFileSync(
          join(dir, "src/dialects/sqlite.ts"),
          '\nexport { mysql2Executor } from "../drivers/mysql2.js";\n',
        );
        appendFileSync(
          join(dir, "src/drivers/libsql.ts"),
          '\nexport type { DrizzleSaver } from "../savers/saver.js";\n',
        );
        appendFileSync(
          join(dir, "src/savers/options.ts"),
          '\nexport { sqliteDialect } from "../dialects/sqlite.js";\n',
        );
        appendFileSync(join(dir, "src/errors.ts"), '\nexport { databaseFamily } from "./database-family.js";\n');
      });
      expect(code).not.toBe(0);
      for (const rule of [
        "dialects-beside-drivers",
        "drivers-beside-dialects",
        "savers-never-branch-on-a-database",
        "no-cycles",
      ])
        expect(output).toContain(rule);
      // Each violation is named by the file that breaks the rule.
      expect(output).toMatch(/dialects-beside-drivers: src\/dialects\/sqlite\.ts/);
      expect(output).toMatch(/drivers-beside-dialects: src\/drivers\/libsql\.ts/);
      expect(output).toMatch(/savers-never-branch-on-a-database: src\/savers\/options\.ts/);
    },
    TIMEOUT,
  );
});

describe("the errors module", () => {
  it("declares every error class of src/, each a CheckpointSaverError", async () => {
    const errors = await import("../src/errors.js");
    const { readdirSync, readFileSync } = await import("node:fs");
    const files = readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" }).filter((f) =>
      f.endsWith(".ts"),
    );
    const elsewhere = files.filter(
      (file) =>
        file !== "errors.ts" &&
        /\bexport class \w+ extends \w*Error\b/.test(readFileSync(join(root, "src", file), "utf8")),
    );
    expect(elsewhere).toEqual([]);
    const classes = Object.values(errors).filter(
      (value) => typeof value === "function" && /^class /.test(String(value)),
    );
    expect(classes.length).toBeGreaterThan(10);
    for (const type of classes.filter((type) => type !== errors.CheckpointSaverError))
      expect(type.prototype).toBeInstanceOf(errors.CheckpointSaverError);
  });
});
