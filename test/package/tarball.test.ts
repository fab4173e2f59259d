// What the tarball holds, and what publint and arethetypeswrong say about it.
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { publint } from "publint";
import { formatMessage } from "publint/utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packedTarball, type ScratchApp, scratchApp, TOOLS } from "./tarball.js";

const run = promisify(execFile);

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The bare module names a built file imports or requires (relative ones left out). */
function importedPackages(text: string): string[] {
  const specifiers = [
    ...text.matchAll(/\bfrom\s+"([^"]+)"/g),
    ...text.matchAll(/\bimport\s+"([^"]+)"/g),
    ...text.matchAll(/\brequire\("([^"]+)"\)/g),
    ...text.matchAll(/\bimport\("([^"]+)"\)/g),
  ].map((match) => match[1]);
  return specifiers
    .filter((specifier) => !specifier.startsWith("."))
    .map((specifier) => {
      const parts = specifier.split("/");
      return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
    });
}

describe("the packed tarball", () => {
  let app: ScratchApp;
  let files: string[];
  let manifest: {
    dependencies: Record<string, string>;
    peerDependencies: Record<string, string>;
    scripts: Record<string, string>;
  };

  beforeAll(async () => {
    app = await scratchApp("module", {}, "contents");
    files = filesUnder(app.packageDir).map((file) => relative(app.packageDir, file));
    manifest = JSON.parse(readFileSync(join(app.packageDir, "package.json"), "utf8"));
  }, 300_000); // the first test file to get here packs (builds) the tarball
  afterAll(() => app?.remove());

  it("ships the licence, the builds and the migrations, and no source maps", () => {
    expect(files).toContain("LICENSE");
    expect(readFileSync(join(app.packageDir, "LICENSE"), "utf8")).toMatch(
      /^MIT License[\s\S]*langgraph-checkpoint-drizzle contributors/,
    );
    for (const entry of ["index", "schema/pg", "schema/mysql", "schema/sqlite"]) {
      for (const ext of [".js", ".cjs", ".d.ts", ".d.cts"]) expect(files).toContain(`dist/${entry}${ext}`);
    }
    expect(files).toContain("dist/cli/main.js");
    for (const family of ["pg", "mysql", "sqlite"]) expect(files).toContain(`migrations/${family}/meta/_journal.json`);
    expect(files.filter((file) => file.endsWith(".map"))).toEqual([]);
    const built = files
      .filter((file) => file.startsWith("dist/"))
      .map((f) => readFileSync(join(app.packageDir, f), "utf8"));
    expect(built.filter((text) => text.includes("sourceMappingURL"))).toEqual([]);
  });

  it("ships every file the README links to, so its links work where the package is read", () => {
    const readme = readFileSync(join(app.packageDir, "README.md"), "utf8");
    const linked = [...readme.matchAll(/\]\(([^)#:]+)(#[^)]*)?\)/g)].map((match) => match[1]);
    expect(linked.length).toBeGreaterThan(5);
    expect(linked.filter((path) => !files.includes(path))).toEqual([]);
  });

  it("installs without running a build (prepack, not prepare)", () => {
    expect(manifest.scripts.prepare).toBeUndefined();
    expect(manifest.scripts.prepack).toBeDefined();
  });

  it("imports only its declared dependencies and peers at run time", () => {
    const declared = new Set([...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)]);
    const builtins = new Set(builtinModules);
    const undeclared = files
      .filter((file) => /^dist\/.*\.c?js$/.test(file))
      .flatMap((file) => importedPackages(readFileSync(join(app.packageDir, file), "utf8")))
      .filter((name) => !declared.has(name) && !builtins.has(name) && !name.startsWith("node:"));
    expect([...new Set(undeclared)]).toEqual([]);
  });

  it("passes publint with no message at all", async () => {
    const { messages, pkg } = await publint({ pkgDir: app.packageDir, pack: false, level: "suggestion" });
    expect(messages.map((message) => `${message.type}: ${formatMessage(message, pkg)}`)).toEqual([]);
  });

  it("passes arethetypeswrong for every entry point and resolution mode", async () => {
    const tarball = await packedTarball();
    // attw exits non-zero on any problem; its table says which.
    const result = await run(process.execPath, [TOOLS.attw, tarball, "--format", "json"], {
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
    const report = JSON.parse(result.stdout) as { analysis: { problems: unknown[] } };
    expect(report.analysis.problems).toEqual([]);
  });
});
