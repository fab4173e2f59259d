import { defineConfig } from "tsdown";

/** The library's entry points, one per subpath of the exports map. */
const libraryEntries = {
  index: "src/index.ts",
  "schema/pg": "src/schema/pg.ts",
  "schema/mysql": "src/schema/mysql.ts",
  "schema/sqlite": "src/schema/sqlite.ts",
};

export default defineConfig([
  {
    entry: libraryEntries,
    format: ["esm", "cjs"],
    dts: { sourcemap: false },
    sourcemap: false,
    // .js and .d.ts for ESM (the package is "type": "module"), .cjs and .d.cts for CommonJS.
    fixedExtension: false,
    outDir: "dist",
    tsconfig: "tsconfig.build.json",
  },
  {
    // The CLI uses top-level await, so it ships as ESM only; `bin` points at it.
    entry: { "cli/main": "src/cli/main.ts" },
    format: ["esm"],
    dts: false,
    sourcemap: false,
    // .js and .d.ts for ESM (the package is "type": "module"), .cjs and .d.cts for CommonJS.
    fixedExtension: false,
    outDir: "dist",
    clean: false,
    tsconfig: "tsconfig.build.json",
  },
]);
