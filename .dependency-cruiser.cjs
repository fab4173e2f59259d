/**
 * The layers of src/ and the one direction of imports between them (`npm run lint`):
 *   foundation: sql/, schema/, serde/, errors.ts, known-options.ts, database-family.ts, duration.ts
 *   dialects/ (what SQL each family speaks) and drivers/ (how a statement runs), beside each other
 *   wiring/ (which dialect and driver serve a database, opening one from a URL)
 *   savers/, spider/, transfer/ (the features), then cli/ and index.ts on top; the savers see a
 *   dialect only through its interface (dialects/dialect.ts) and never a driver.
 * Type-only imports count too: a type from above is still a dependency on it.
 */
const FOUNDATION = "^src/(sql/|schema/|serde/|errors\\.ts|known-options\\.ts|database-family\\.ts|duration\\.ts)";
const ABOVE_FOUNDATION = "^src/(dialects|drivers|wiring|savers|spider|transfer|cli)/|^src/index\\.ts";
const FEATURES_AND_UP = "^src/(wiring|savers|spider|transfer|cli)/|^src/index\\.ts";

module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      severity: "error",
      comment: "Files never import each other in a circle.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "foundation-imports-nothing-above",
      severity: "error",
      comment: "Statement types, schemas, serializers and errors are the bottom layer.",
      from: { path: FOUNDATION },
      to: { path: ABOVE_FOUNDATION },
    },
    {
      name: "dialects-beside-drivers",
      severity: "error",
      comment: "A dialect says what SQL a family speaks: it imports no driver and nothing above.",
      from: { path: "^src/dialects/" },
      to: { path: `^src/drivers/|${FEATURES_AND_UP}` },
    },
    {
      name: "drivers-beside-dialects",
      severity: "error",
      comment: "A driver runs statements: it imports no dialect and nothing above.",
      from: { path: "^src/drivers/" },
      to: { path: `^src/dialects/|${FEATURES_AND_UP}` },
    },
    {
      name: "wiring-below-features",
      severity: "error",
      comment: "The wiring picks a dialect and a driver; the features use it, never the other way.",
      from: { path: "^src/wiring/" },
      to: { path: "^src/(savers|spider|transfer|cli)/|^src/index\\.ts" },
    },
    {
      name: "features-below-cli",
      severity: "error",
      comment: "The library never imports its command line.",
      from: { path: "^src/(savers|spider|transfer)/" },
      to: { path: "^src/cli/|^src/index\\.ts" },
    },
    {
      name: "savers-never-branch-on-a-database",
      severity: "error",
      comment:
        "The savers speak to a database through the Dialect interfaces (the saver's, the store's, the store's vector index) and the executor: no concrete dialect, no driver.",
      from: { path: "^src/savers/" },
      to: { path: "^src/(drivers|dialects)/", pathNot: "^src/dialects/(store-dialect|dialect|store-vectors)\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
