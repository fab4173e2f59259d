import { defineConfig } from "drizzle-kit";

/**
 * One config for the three dialects: DIALECT=pg|mysql|sqlite picks the schema file
 * and the migrations folder. `npm run generate` runs it for each dialect.
 * MIGRATIONS_OUT lets the schema-sync test regenerate into a scratch copy.
 */
const dialect = process.env.DIALECT ?? "pg";
const kit = { pg: "postgresql", mysql: "mysql", sqlite: "sqlite" } as const;
if (!(dialect in kit)) throw new Error(`DIALECT must be pg, mysql or sqlite, not "${dialect}"`);
const name = dialect as keyof typeof kit;

export default defineConfig({
  dialect: kit[name],
  schema: `./src/schema/${name}.ts`,
  out: process.env.MIGRATIONS_OUT ?? `./migrations/${name}`,
  breakpoints: true,
});
