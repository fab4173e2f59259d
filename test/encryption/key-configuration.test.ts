import { describe, expect, it } from "vitest";
import { encryptionFromEnv } from "../../src/cli/keys.js";
import { InvalidInputError, Sealer } from "../../src/index.js";

/**
 * Invalid key configuration is a clear error that never shows a key: the common mistakes
 * put a key where an id belongs ("base64:id" for "id:base64", the active key's variable
 * set to the key itself).
 */
const KEY = Buffer.alloc(32, 9).toString("base64");

/** The message of what `make` throws. */
function messageOf(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    return String(error);
  }
  throw new Error("expected an error");
}

describe("invalid key configuration", () => {
  it("a key given as a key id or as the active key id is not quoted in the error", () => {
    const cases = [
      () => new Sealer({ keys: { [KEY]: "k1" }, activeKeyId: "k1" }),
      () => new Sealer({ keys: { k1: KEY }, activeKeyId: KEY }),
      () => new Sealer(encryptionFromEnv({ LANGGRAPH_CHECKPOINT_KEYS: `${KEY}:k1` }) as never),
      () =>
        new Sealer(
          encryptionFromEnv({ LANGGRAPH_CHECKPOINT_KEYS: `k1:${KEY}`, LANGGRAPH_CHECKPOINT_ACTIVE_KEY: KEY }) as never,
        ),
      () => encryptionFromEnv({ LANGGRAPH_CHECKPOINT_KEYS: `${KEY}:k1,${KEY}:k2` }),
      () => encryptionFromEnv({ LANGGRAPH_CHECKPOINT_KEYS: `${KEY}:k1,k2:${KEY}` }),
    ];
    for (const make of cases) {
      const message = messageOf(make);
      expect(message).not.toContain(KEY);
      expect(message).not.toContain(KEY.slice(0, 16));
    }
    // Still clear: what is wrong, and a short wrong id is named.
    expect(messageOf(cases[0])).toMatch(/key id of 44 characters.*must be 1 to 16/);
    expect(messageOf(cases[1])).toMatch(/activeKeyId of 44 characters.*not among the keys/);
    expect(() => new Sealer({ keys: { "2026:11": KEY }, activeKeyId: "2026:11" })).toThrow(
      /key id "2026:11" must be 1 to 16/,
    );
    expect(() => new Sealer({ keys: { k1: KEY }, activeKeyId: "k9" })).toThrow(/activeKeyId "k9" is not among/);
    expect(() => new Sealer({ keys: { k1: KEY }, activeKeyId: "k9" })).toThrow(InvalidInputError);
  });
});
