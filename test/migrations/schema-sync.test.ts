import { execFile } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

/** Every file under a folder, relative to it. */
function files(folder: string): string[] {
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => `${entry.parentPath.slice(folder.length)}/${entry.name}`)
    .sort();
}

// The TypeScript schema (src/schema) and the committed migrations must agree:
// regenerating into a scratch copy must produce no new migration.
describe.each(["pg", "mysql", "sqlite"])("migrations of %s", (dialect) => {
  it("are in sync with the schema", async () => {
    const scratch = `drizzle/${dialect}-${process.pid}`;
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync("drizzle", { recursive: true });
    cpSync(`migrations/${dialect}`, scratch, { recursive: true });
    try {
      const { stdout } = await run("npx", ["drizzle-kit", "generate"], {
        env: { ...process.env, DIALECT: dialect, MIGRATIONS_OUT: `./${scratch}` },
        timeout: 60_000,
      });
      expect(files(scratch)).toEqual(files(`migrations/${dialect}`));
      expect(stdout).toMatch(/No schema changes/);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
