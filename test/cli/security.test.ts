// Issue 20 against the real binary: __proto__ filter keys and printed keys (point 4),
// passwords in URLs (point 6), hostile text from rows and errors (point 7). Point 9
// (read-only SQLite) is in readonly.test.ts.
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { cli, ensureBuilt, expectOneLineError, jsonLines, rawQuery } from "./helpers.js";

/** What must never reach a terminal raw: C0 but newline, DEL, C1 and bidirectional controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds.
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const HOSTILE = "\u001b[2J\u001b]0;owned\u0007\u009b31m\u202egnp.exe\u2066x\u2069";
const EVIL_THREAD = `evil${HOSTILE}`;

/** One checkpoint with the given metadata and channel values. */
async function putOne(
  saver: DrizzleSaver,
  threadId: string,
  metadata: Record<string, unknown>,
  values: Record<string, unknown>,
): Promise<void> {
  const versions = Object.fromEntries(Object.keys(values).map((channel) => [channel, `${"0".repeat(31)}1.0`]));
  await saver.put(
    { configurable: { thread_id: threadId, checkpoint_ns: "" } },
    {
      v: 4,
      id: `${threadId}-cp`,
      ts: "2025-03-01T00:00:00.000Z",
      channel_values: values,
      channel_versions: versions,
      versions_seen: {},
    },
    metadata as CheckpointMetadata,
    versions,
  );
}

async function seed(url: string): Promise<void> {
  const migrated = await cli(["migrate", "--url", url]);
  expect(migrated.code, migrated.stderr).toBe(0);
  const saver = await DrizzleSaver.fromUrl(url);
  try {
    const base = { source: "input", step: -1, parents: {} };
    await putOne(saver, "proto", JSON.parse('{"__proto__":"nobody","user":"u1"}'), {
      payload: JSON.parse('{"__proto__":{"inner":1},"plain":2}'),
    });
    await putOne(saver, "plain", { ...base, user: "u2" }, { payload: { plain: 3 } });
    await putOne(saver, EVIL_THREAD, { ...base, note: HOSTILE, [HOSTILE]: 1 }, { [`ch${HOSTILE}`]: HOSTILE });
    await putOne(saver, "bad-type", base, { payload: 1 });
  } finally {
    await saver.close();
  }
  // A stored value whose serialization type is hostile text: its error message quotes it.
  await rawQuery(
    dialectOf(url),
    url,
    `update checkpoint_blobs set type = 'x${HOSTILE.replace(/'/g, "''")}' where thread_id = 'bad-type'`,
  );
}

function dialectOf(url: string): DialectName {
  if (url.startsWith("postgres")) return "postgres";
  if (url.startsWith("mysql")) return "mysql";
  return "sqlite";
}

describe.each(DIALECTS)("hostile rows and filters through the CLI on %s", { timeout: 300_000 }, (dialect) => {
  let url: string;
  beforeAll(async () => {
    await ensureBuilt();
    url = await freshDatabaseUrl(dialect);
    await seed(url);
  }, 15 * 60_000);

  it("--filter __proto__=nobody matches the key, and show/history print __proto__ keys", async () => {
    const matched = await cli(["threads", "--url", url, "--json", "--filter", "__proto__=nobody"]);
    expect(matched.code, matched.stderr).toBe(0);
    expect(jsonLines(matched.stdout).map((t) => t.threadId)).toEqual(["proto"]);

    const show = await cli(["show", "--url", url, "--thread", "proto", "--json"]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('"__proto__":"nobody"');
    expect(show.stdout).toContain('"payload":{"__proto__":{"inner":1},"plain":2}');
    const [doc] = jsonLines<{ metadata: object }>(show.stdout);
    expect(Object.hasOwn(doc.metadata, "__proto__")).toBe(true);

    const history = await cli(["history", "--url", url, "--thread", "proto", "--json"]);
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toContain('"__proto__":"nobody"');
  });

  it("the README's pipeline into prune deletes only the threads the filter lists", async () => {
    const none = await cli(["threads", "--url", url, "--json", "--filter", "__proto__=somebody"]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe("");
    const ids = (stdout: string) =>
      jsonLines(stdout)
        .map((t) => `${t.threadId}\n`)
        .join("");
    const pruned = await cli(["prune", "--url", url, "-", "--strategy", "delete", "--yes"], {
      input: ids(none.stdout),
    });
    expectOneLineError(pruned, 2, /no thread ids given/);
    const all = await cli(["threads", "--url", url, "--json"]);
    expect(jsonLines(all.stdout)).toHaveLength(4);
  });

  it("hostile text from rows reaches the terminal escaped, and JSON output stays faithful", async () => {
    const human = await cli(["threads", "--url", url]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).not.toMatch(RAW_CONTROL);
    expect(human.stdout).toContain("evil\\u001b[2J\\u001b]0;owned\\u0007\\u009b31m\\u202egnp.exe\\u2066x\\u2069");

    const json = await cli(["threads", "--url", url, "--json"]);
    expect(json.stdout).not.toMatch(RAW_CONTROL);
    expect(jsonLines(json.stdout).map((t) => t.threadId)).toContain(EVIL_THREAD);

    for (const args of [["show"], ["show", "--json"], ["history"], ["history", "--json"]]) {
      const result = await cli([...args, "--url", url, "--thread", EVIL_THREAD]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout, args.join(" ")).not.toMatch(RAW_CONTROL);
      expect(result.stdout).toContain("\\u009b31m");
      if (args.includes("--json") && args[0] === "show") {
        const [doc] = jsonLines<{ metadata: Record<string, unknown>; values: Record<string, unknown> }>(result.stdout);
        expect(doc.metadata.note).toBe(HOSTILE);
        expect(doc.metadata[HOSTILE]).toBe(1);
        expect(doc.values[`ch${HOSTILE}`]).toBe(HOSTILE);
      }
    }
  });

  it("an error message quoting a row's text is escaped", async () => {
    const result = await cli(["show", "--url", url, "--thread", "bad-type"]);
    expectOneLineError(result, 1, /unknown serialization type/);
    expect(result.stderr).not.toMatch(RAW_CONTROL);
    expect(result.stderr).toContain("\\u001b[2J");
  });
});

describe("passwords in URLs through the CLI", { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await ensureBuilt();
  }, 15 * 60_000);

  it("an unreachable server: no part of the password is printed", async () => {
    const withAt = await cli(["status", "--url", "postgres://app:top@secret@127.0.0.1:1/db"]);
    expectOneLineError(
      withAt,
      1,
      /^error: cannot reach postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/db: connection refused/,
    );
    expect(withAt.stderr).not.toMatch(/top|secret/);

    const inQuery = await cli(["threads"], {
      env: { LANGGRAPH_CHECKPOINT_URL: "mysql://app@127.0.0.1:1/db?password=hunter2&password1=swordfish" },
    });
    expect(inQuery.code).toBe(1);
    expect(inQuery.stderr).toContain("mysql://app@127.0.0.1:1/db?password=***&password1=***");
    expect(inQuery.stderr).not.toMatch(/hunter2|swordfish/);
  });

  it("status prints the URL of a live database without its password", async () => {
    const live = new URL(process.env.PG_URL ?? "");
    // The test server trusts local connections: the password is never checked, only printed.
    const url = `postgres://${live.username}:top@secret@${live.host}${live.pathname}?sslmode=disable`;
    const result = await cli(["status", "--url", url, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    expect(jsonLines(result.stdout)[0].url).toBe(
      `postgres://${live.username}:***@${live.host}${live.pathname}?sslmode=disable`,
    );
    expect(result.stdout).not.toMatch(/top|secret/);
  });
});
