// Scratch applications that install the packed tarball: JavaScript ones load every
// entry point and run a saver, TypeScript ones type-check, and the CLI starts.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { PACKAGE_NAME, packedTarball, runIn, type ScratchApp, scratchApp, TOOLS } from "./tarball.js";

const FIXTURES = join(import.meta.dirname, "fixtures");
const fixture = (path: string) => readFileSync(join(FIXTURES, path), "utf8");

// Packing (a build) takes a while on a busy machine: once, before any test's own timeout runs.
beforeAll(() => packedTarball(), 300_000);

const apps: ScratchApp[] = [];
afterAll(() => {
  for (const app of apps) app.remove();
});

async function app(type: "module" | "commonjs", files: Record<string, string>, label: string) {
  const made = await scratchApp(type, files, label);
  apps.push(made);
  return made;
}

interface Report {
  resolved: Record<string, string>;
  errorsShareBase: boolean;
  serializer: string;
  tables: Record<string, string[]>;
  runs: { migrations: string[]; log: string[] }[];
}

const TABLE_KEYS = ["checkpoints", "checkpointBlobs", "checkpointWrites", "checkpointThreads"];

describe.each([
  { type: "module" as const, file: "app.mjs", build: "dist/index.js", server: "mysql" as const, first: "0000_init" },
  {
    type: "commonjs" as const,
    file: "app.cjs",
    build: "dist/index.cjs",
    server: "postgres" as const,
    first: "0000_init",
  },
])("a $type application", ({ type, file, build, server }) => {
  it("loads the four entry points from the tarball and runs a graph on SQLite and a server", async () => {
    const scratch = await app(type, { [file]: fixture(`runtime/${file}`) }, `run-${type}`);
    const urls = [`file:${join(scratch.dir, "app.db")}`, await freshDatabaseUrl(server)];
    const report = JSON.parse(await runIn(scratch.dir, process.execPath, [file, ...urls])) as Report;

    // Resolved through the exports map to the build of the application's module system.
    const main = report.resolved.main.replace(/^file:\/\//, "");
    expect(main).toBe(join(scratch.packageDir, build));
    expect(report.resolved.pg.replace(/^file:\/\//, "")).toBe(
      join(scratch.packageDir, build.replace("index", "schema/pg")),
    );
    expect(report.errorsShareBase).toBe(true);
    expect(report.serializer).toBe("function");
    expect(report.tables).toEqual({ pg: TABLE_KEYS, mysql: TABLE_KEYS, sqlite: TABLE_KEYS });
    // setup() found the shipped migrations from this build, and the graph resumed its thread.
    for (const run of report.runs) {
      expect(run.migrations[0]).toBe("0000_init");
      expect(run.log).toEqual(["start", "step 1", "again", "step 3"]);
    }
    expect(report.runs).toHaveLength(2);
  });
});

describe("the README's quick start", () => {
  it("runs as written in an ESM TypeScript application", async () => {
    const readme = readFileSync(join(import.meta.dirname, "..", "..", "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Quick start"));
    const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(code).toBeDefined();
    const scratch = await app("module", { "quick-start.ts": code ?? "" }, "quick-start");
    const output = await runIn(scratch.dir, process.execPath, ["--import", "tsx", "quick-start.ts"], {
      DATABASE_URL: "", // the example's SQLite file, in the application's folder
    });
    expect(output.trim()).toBe("2");
  });
});

describe("the command line tool", () => {
  it("runs from the package's bin and reads the migrations the saver applied", async () => {
    const scratch = await app("module", { "app.mjs": fixture("runtime/app.mjs") }, "cli");
    const manifest = JSON.parse(readFileSync(join(scratch.packageDir, "package.json"), "utf8"));
    const bin = join(scratch.packageDir, manifest.bin[PACKAGE_NAME]);
    expect(await runIn(scratch.dir, process.execPath, [bin, "--help"])).toMatch(/Usage: langgraph-checkpoint-drizzle/);
    const url = `file:${join(scratch.dir, "cli.db")}`;
    await runIn(scratch.dir, process.execPath, ["app.mjs", url]);
    expect(await runIn(scratch.dir, process.execPath, [bin, "status", "--url", url])).toContain("0000_init");
  });
});

// One after the other: three type-checks at once overload a small CI machine.
describe("TypeScript applications", () => {
  const source = { "index.ts": fixture("typecheck/index.ts") };
  it.each([
    { name: "CommonJS, moduleResolution node16", type: "commonjs" as const, config: "tsconfig.node16.json" },
    { name: "ESM, moduleResolution node16", type: "module" as const, config: "tsconfig.node16.json" },
    { name: "moduleResolution bundler", type: "module" as const, config: "tsconfig.bundler.json" },
  ])(
    "type-check as $name",
    async ({ type, config }) => {
      const files = { ...source, "tsconfig.json": fixture(`typecheck/${config}`) };
      const scratch = await app(type, files, `tsc-${type}`);
      const listed = await runIn(scratch.dir, process.execPath, [TOOLS.tsc, "-p", "tsconfig.json", "--listFiles"]);
      // The declarations came from the tarball, for the module system of the project.
      const declarations = type === "commonjs" ? ["index.d.cts", "schema/pg.d.cts"] : ["index.d.ts", "schema/pg.d.ts"];
      for (const name of declarations) expect(listed).toContain(join(scratch.packageDir, "dist", name));
    },
    180_000,
  );
});
