// What the CLI may print, checked on its functions directly (the binary is run in
// security.test.ts): password redaction for every URL form, terminal escaping,
// filters and printed values with "__proto__" keys (issue 20, points 4, 6 and 7).
import { describe, expect, it } from "vitest";
import { describeError } from "../../src/cli/errors.js";
import { parseFilter } from "../../src/cli/options.js";
import { toPlain } from "../../src/cli/output.js";
import { redactText, redactUrl } from "../../src/cli/redact.js";
import { escapeTerminal } from "../../src/cli/terminal-text.js";

describe("password redaction", () => {
  it.each([
    ["postgres://app:top@secret@host/db", "postgres://app:***@host/db"],
    ["postgres://app:a:b@c@host:5432/db", "postgres://app:***@host:5432/db"],
    ["postgresql://app:pa/ss@host/db", "postgresql://app:***@host/db"],
    ["postgres://app:12?x#y@host/db", "postgres://app:***@host/db"],
    ["postgres://user@server:pw@host/db", "postgres://user@server:***@host/db"],
    ["mysql://app:s%40cret@host:3306/db", "mysql://app:***@host:3306/db"],
    ["mysql://app@host/db?password=hunter2", "mysql://app@host/db?password=***"],
    ["mysql://host/db?ssl=true&password1=a1&Password2=b2", "mysql://host/db?ssl=true&password1=***&Password2=***"],
    ["postgres://host/db?sslpassword=k3y&application_name=x", "postgres://host/db?sslpassword=***&application_name=x"],
    ["postgres://host/db?SSLPASSWORD=k3y", "postgres://host/db?SSLPASSWORD=***"],
    ["postgres://host/db?pass%77ord=k3y", "postgres://host/db?pass%77ord=***"],
    ["postgres://127.0.0.1:5432/db", "postgres://127.0.0.1:5432/db"],
    ["/srv/agent/checkpoints.db", "/srv/agent/checkpoints.db"],
  ])("%s is printed as %s", (url, printed) => {
    expect(redactUrl(url)).toBe(printed);
  });

  it("never leaves a password in an error message that quotes it or its URL", () => {
    const url = "postgres://app:top@secret@db.internal/app?sslpassword=k3y-pass";
    const quoted = new Error(
      `connect to ${url}: password authentication failed for "top@secret" (sslpassword k3y-pass)`,
    );
    const text = describeError(quoted, [url]);
    for (const secret of ["top@secret", "secret@", "k3y-pass"]) expect(text).not.toContain(secret);
    expect(text).toContain("postgres://app:***@db.internal/app?sslpassword=***");
    expect(redactText("cannot reach mysql://u:pw1@h/db: refused")).toBe("cannot reach mysql://u:***@h/db: refused");
  });
});

describe("terminal escaping", () => {
  it("escapes C0, DEL, C1 (U+009B) and bidirectional controls, and nothing else", () => {
    const hostile = "a\u001b[2Jb\u009b31mc\u202ed\u2066e\u2069f\u200eg\u200fh\u007fi\u0085j\u061ck\u2028l";
    const escaped = escapeTerminal(hostile);
    expect(escaped).toBe(
      "a\\u001b[2Jb\\u009b31mc\\u202ed\\u2066e\\u2069f\\u200eg\\u200fh\\u007fi\\u0085j\\u061ck\\u2028l",
    );
    // Inside a JSON string the escaped text still means the original.
    expect(JSON.parse(`"${escaped}"`)).toBe(hostile);
    expect(escapeTerminal("a\nb\tc")).toBe("a\\nb\\tc");
    expect(escapeTerminal("a\nb\tc", { keepNewlines: true })).toBe("a\nb\\tc");
    expect(escapeTerminal("héllo → 世界 🙂")).toBe("héllo → 世界 🙂");
  });
});

describe("__proto__ keys", () => {
  it("a --filter key __proto__ is a key of the filter, not its prototype", () => {
    const filter = parseFilter("__proto__=nobody", parseFilter("user=u1", undefined));
    expect(Object.getPrototypeOf(filter)).toBe(Object.prototype);
    expect(Object.entries(filter)).toEqual([
      ["user", "u1"],
      ["__proto__", "nobody"],
    ]);
    const nested = parseFilter('__proto__={"polluted":true}', undefined);
    expect(Object.keys(nested)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(() => parseFilter("__proto__=2", nested)).toThrow(/given twice/);
  });

  it("printed values keep their __proto__ keys", () => {
    const value = JSON.parse('{"a":1,"__proto__":{"b":2},"list":[{"__proto__":"x"}]}');
    expect(JSON.stringify(toPlain(value))).toBe('{"a":1,"__proto__":{"b":2},"list":[{"__proto__":"x"}]}');
    expect(JSON.stringify(toPlain(new Map([["__proto__", 1]])))).toBe('{"__proto__":1}');
  });
});
