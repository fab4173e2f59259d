// setup() for a least-privileged PostgreSQL role: the schema exists already (a DBA
// made it), the role may use and create in it and connect to the database, nothing
// more. setup() must work and must not try CREATE SCHEMA. Item 3 of issue 6.
import { randomBytes } from "node:crypto";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { resumeFlow, startFlow } from "./support.js";

const SCHEMA = "agent_store";

describe("setup() as a PostgreSQL role with USAGE and CREATE on an existing schema only", () => {
  const role = `lgcd_app_${randomBytes(4).toString("hex")}`;
  const password = randomBytes(12).toString("hex");
  let adminUrl = "";
  let roleUrl = "";
  let database = "";

  beforeAll(async () => {
    adminUrl = await freshDatabaseUrl("postgres");
    database = new URL(adminUrl).pathname.slice(1);
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`create schema ${SCHEMA}`);
      await admin.unsafe(`create role ${role} login password '${password}'`);
      // Only what the application needs: connect, and use + create in its schema.
      await admin.unsafe(`revoke all on database ${database} from public`);
      await admin.unsafe(`revoke all on schema public from public`);
      await admin.unsafe(`grant connect on database ${database} to ${role}`);
      await admin.unsafe(`grant usage, create on schema ${SCHEMA} to ${role}`);
      // Unqualified names (the saver's default tables) resolve to that schema.
      await admin.unsafe(`alter role ${role} in database ${database} set search_path = ${SCHEMA}`);
    } finally {
      await admin.end();
    }
    const url = new URL(adminUrl);
    url.username = role;
    url.password = password;
    roleUrl = url.toString();
  });

  afterAll(async () => {
    // Roles belong to the whole server: remove this one and what it owns.
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`drop owned by ${role} cascade`);
      await admin.unsafe(`drop role if exists ${role}`);
    } finally {
      await admin.end();
    }
  });

  it("applies the migrations into the existing schema without CREATE SCHEMA", async () => {
    const statements: string[] = [];
    const client = postgres(roleUrl, {
      max: 2,
      onnotice: () => {},
      debug: (_connection, query) => {
        statements.push(query);
      },
    });
    try {
      // The premise: this role cannot create schemas (nor tables in "public").
      const [privileges] = await client`
        select has_database_privilege(current_user, current_database(), 'CREATE') as create_schema,
               has_schema_privilege(current_user, 'public', 'CREATE') as create_in_public,
               has_schema_privilege(current_user, ${SCHEMA}, 'CREATE') as create_in_own`;
      expect(privileges).toEqual({ create_schema: false, create_in_public: false, create_in_own: true });
      await expect(client.unsafe(`create schema ${SCHEMA}_other`)).rejects.toThrow(/permission denied/);
      await expect(client.unsafe(`create schema if not exists ${SCHEMA}`)).rejects.toThrow(/permission denied/);
      statements.length = 0;

      const saver = new DrizzleSaver(drizzle(client), { migrationsSchema: SCHEMA });
      await saver.setup();
      await saver.setup();
      expect(statements.filter((statement) => /create\s+schema/i.test(statement))).toEqual([]);

      // The migrations table and the saver's tables are in the role's schema, all owned by it.
      const tables = await client`
        select table_schema, table_name from information_schema.tables
        where table_name in ('langgraph_checkpoint_migrations', 'checkpoints', 'checkpoint_blobs', 'checkpoint_writes')
        order by table_name`;
      expect(tables.map((t) => `${t.table_schema}.${t.table_name}`)).toEqual([
        `${SCHEMA}.checkpoint_blobs`,
        `${SCHEMA}.checkpoint_writes`,
        `${SCHEMA}.checkpoints`,
        `${SCHEMA}.langgraph_checkpoint_migrations`,
      ]);
      const [{ n }] = await client`select count(*)::int as n from ${client(SCHEMA)}.langgraph_checkpoint_migrations`;
      expect(n).toBeGreaterThan(0);

      // And a graph runs on them.
      await startFlow(saver, "least-privilege", "access request");
      await resumeFlow(saver, "least-privilege", "access request", { approved: true, note: "least privilege" });
    } finally {
      await client.end();
    }
  });
});
