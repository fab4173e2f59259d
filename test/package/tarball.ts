// The package as users get it: the tarball `npm pack` makes, installed into scratch
// applications in temporary folders. Tests import nothing from src/ through here.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const PACKAGE_NAME = "langgraph-checkpoint-drizzle";

/** Everything the tarball is made from: a change to any of these makes a new one. */
const INPUTS = [
  "src",
  "migrations",
  "docs",
  "package.json",
  "tsdown.config.ts",
  "tsconfig.json",
  "tsconfig.build.json",
];
const INPUT_FILES = ["LICENSE", "README.md", "BENCHMARKS.md", "CHANGELOG.md", "CONTRIBUTING.md", "RELIABILITY.md"];

function filesUnder(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => filesUnder(join(path, name)));
}

function inputsHash(): string {
  const hash = createHash("sha256");
  for (const file of [...INPUTS, ...INPUT_FILES].flatMap((name) => filesUnder(join(ROOT, name)))) {
    hash.update(relative(ROOT, file)).update("\0").update(readFileSync(file)).update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}

/** Longer than any pack takes, even on a busy machine. */
const STALE_PACK_MS = 10 * 60_000;

async function waitFor(path: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${path}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Builds and packs the package once per content of its sources (`npm pack` runs the
 * `prepack` build), shared by the test files of one run: the first one packs under a
 * lock directory, the others wait for its tarball. Returns the tarball's path.
 */
export async function packedTarball(): Promise<string> {
  const folder = join(tmpdir(), `lgcd-package-${inputsHash()}`);
  const done = join(folder, "tarball-path");
  if (!existsSync(done)) {
    // A packer killed half-way leaves its folder without a tarball: after a while, take over.
    if (existsSync(folder) && Date.now() - statSync(folder).mtimeMs > STALE_PACK_MS) {
      rmSync(folder, { recursive: true, force: true });
    }
    let owner = true;
    try {
      mkdirSync(folder);
    } catch {
      owner = false;
    }
    if (owner) {
      try {
        await run("npm", ["pack", "--pack-destination", folder], {
          cwd: ROOT,
          timeout: 300_000,
          maxBuffer: 16 * 1024 * 1024,
        });
        const [filename] = readdirSync(folder).filter((name) => name.endsWith(".tgz"));
        writeFileSync(`${done}.tmp`, join(folder, filename));
        renameSync(`${done}.tmp`, done);
      } catch (error) {
        rmSync(folder, { recursive: true, force: true });
        throw error;
      }
    } else {
      await waitFor(done, 300_000);
    }
  }
  return readFileSync(done, "utf8");
}

export interface ScratchApp {
  /** The application's root folder. */
  dir: string;
  /** Where the tarball was unpacked, as `npm install` would. */
  packageDir: string;
  remove(): void;
}

/**
 * A new application folder with its own package.json (`type`) and `files`, and the
 * packed package unpacked into node_modules/langgraph-checkpoint-drizzle. Its
 * dependencies and peers (drizzle-orm, the drivers, LangGraph, TypeScript, drizzle-kit)
 * are links to the repository's node_modules, so nothing is downloaded; the package
 * itself is only the tarball's files, reached through its exports map.
 */
export async function scratchApp(
  type: "module" | "commonjs",
  files: Record<string, string>,
  label: string = type,
): Promise<ScratchApp> {
  const tarball = await packedTarball();
  const dir = mkdtempSync(join(tmpdir(), `lgcd-app-${label}-`));
  const modules = join(dir, "node_modules");
  mkdirSync(modules);
  for (const name of readdirSync(join(ROOT, "node_modules"))) {
    if (name === PACKAGE_NAME || name === ".package-lock.json") continue;
    symlinkSync(join(ROOT, "node_modules", name), join(modules, name));
  }
  await run("tar", ["-xzf", tarball, "-C", modules]);
  const packageDir = join(modules, PACKAGE_NAME);
  renameSync(join(modules, "package"), packageDir);
  const manifest = { name: `scratch-${label}`, private: true, type, dependencies: { [PACKAGE_NAME]: tarball } };
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return { dir, packageDir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs a command in the application's folder; a failure carries its output. */
export async function runIn(
  dir: string,
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  try {
    const { stdout, stderr } = await run(command, args, {
      cwd: dir,
      env: { ...process.env, ...env },
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return `${stdout}${stderr}`;
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(" ")} failed in ${dir}:\n${stdout}\n${stderr}`, { cause: error });
  }
}

/** The repository's copy of a tool's CLI, run with node (npx costs a second a call). */
export const TOOLS = {
  tsc: join(ROOT, "node_modules", "typescript", "bin", "tsc"),
  drizzleKit: join(ROOT, "node_modules", "drizzle-kit", "bin.cjs"),
  attw: join(ROOT, "node_modules", "@arethetypeswrong", "cli", "dist", "index.js"),
};
