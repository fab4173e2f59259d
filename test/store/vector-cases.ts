/**
 * The semantic search cases every search path must pass, exact or through a native index:
 * namespace and filter applied first, highest cosine first, items without vectors after,
 * deep offsets exact against a brute-force cosine; an empty query is no query; a re-put
 * replaces the item's vectors and a wrong-size embedding is an error that writes nothing.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type DrizzleStoreOptions, InvalidInputError } from "../../src/index.js";
import { manualClock, type OpenStore } from "../helpers/stores.js";

export const DIMS = 8;

/** A deterministic embedding: character counts hashed into DIMS buckets. */
function embedText(text: string): number[] {
  const vector = new Array<number>(DIMS).fill(0);
  [...text].forEach((char, i) => {
    const code = char.codePointAt(0) ?? 0;
    vector[(code * 31 + i) % DIMS] += 1 + (code % 7);
  });
  return vector;
}

let calls = 0;
export const embed = async (texts: string[]) => {
  calls++;
  return texts.map((text) => (text.includes("WRONG") ? [1, 2, 3] : embedText(text)));
};

function cosine(a: number[], b: number[]): number {
  const f = b.map(Math.fround); // stored as float32
  const dot = a.reduce((sum, x, i) => sum + x * f[i], 0);
  const norms = Math.sqrt(a.reduce((s, x) => s + x * x, 0) * f.reduce((s, x) => s + x * x, 0));
  return norms === 0 ? 0 : dot / norms;
}

const WORDS = ["apple", "banana", "cherry", "delta", "echo", "fig", "grape", "hotel", "india", "juliet"];

interface Doc {
  namespace: string[];
  key: string;
  value: { text: string; group: number };
  indexed: boolean;
}

const DOCS: Doc[] = Array.from({ length: 60 }, (_, i) => ({
  namespace: i % 5 === 0 ? ["other"] : ["docs", i % 2 === 0 ? "a" : "b"],
  key: `doc-${String(i).padStart(2, "0")}`,
  value: { text: `${WORDS[i % 10]} ${WORDS[(i * 7) % 10]} ${i}`, group: i % 3 },
  indexed: i % 11 !== 0,
}));

/** The cases, in the caller's describe block, on stores `open` makes with the options given. */
export function vectorSearchCases(
  open: (options: DrizzleStoreOptions) => Promise<OpenStore>,
  index: Partial<NonNullable<DrizzleStoreOptions["index"]>> = {},
) {
  let opened: OpenStore;
  const clock = manualClock();
  beforeAll(async () => {
    opened = await open({ clock: clock.now, index: { dims: DIMS, embed, fields: ["text"], ...index } });
    for (const doc of DOCS) {
      clock.tick();
      await opened.store.put(doc.namespace, doc.key, doc.value, doc.indexed ? undefined : false);
    }
  }, 120_000);
  afterAll(async () => opened?.close());

  it("ranks by cosine after prefix and filter, pages exact at every offset", async () => {
    const query = "banana cherry 12";
    const q = embedText(query);
    const candidates = DOCS.filter((d) => d.namespace[0] === "docs" && d.value.group !== 1);
    const scored = candidates
      .filter((d) => d.indexed)
      .map((d) => ({ key: d.key, score: cosine(q, embedText(d.value.text)) }))
      .sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : 1));
    // Without vectors: newest first (the later put).
    const unscored = candidates.filter((d) => !d.indexed).reverse();
    const expected = [...scored.map((s) => s.key), ...unscored.map((d) => d.key)];
    const got: { key: string; score?: number }[] = [];
    for (let offset = 0; offset < expected.length + 5; offset += 4) {
      const page = await opened.store.search(["docs"], { query, filter: { group: { $ne: 1 } }, limit: 4, offset });
      expect(page.length).toBe(Math.max(0, Math.min(4, expected.length - offset)));
      got.push(...page);
    }
    expect(got.map((item) => item.key)).toEqual(expected);
    scored.forEach(({ score }, i) => {
      expect(got[i].score).toBeCloseTo(score, 6);
    });
    expect(got.slice(scored.length).every((item) => item.score === undefined)).toBe(true);
  });

  it("replaces an item's vectors when it is put again", async () => {
    const { store } = opened;
    const query = "zulu zulu zulu";
    await store.put(["fresh"], "k", { text: "apple pie" });
    await store.put(["fresh"], "other", { text: "zulu zulu zulu" });
    await store.put(["fresh"], "k", { text: "zulu zulu zulu" });
    const [first, second] = await store.search(["fresh"], { query });
    expect(first.score).toBeCloseTo(1, 6);
    expect(second.score).toBeCloseTo(1, 6);
    await store.put(["fresh"], "k", { text: "apple pie" });
    const ranked = await store.search(["fresh"], { query });
    expect(ranked.map((item) => item.key)).toEqual(["other", "k"]);
    expect(ranked[1].score).toBeCloseTo(cosine(embedText(query), embedText("apple pie")), 6);
  });

  it("reads an empty query as no query, as InMemoryStore does: newest first, no scores, no call to the model", async () => {
    const { store } = opened;
    const before = calls;
    const withEmpty = await store.search(["docs"], { query: "", limit: 5 });
    expect(calls).toBe(before);
    expect(withEmpty.every((item) => item.score === undefined)).toBe(true);
    const without = await store.search(["docs"], { limit: 5 });
    expect(withEmpty.map((item) => item.key)).toEqual(without.map((item) => item.key));
  });

  it("refuses a wrong-size embedding before writing anything", async () => {
    const { store } = opened;
    const before = calls;
    await expect(
      store.batch([
        { namespace: ["wrong"], key: "good", value: { text: "fine" } },
        { namespace: ["wrong"], key: "bad", value: { text: "WRONG size" } },
      ]),
    ).rejects.toThrow(InvalidInputError);
    expect(calls).toBe(before + 1); // one call to the model for the whole batch
    expect(await store.search(["wrong"])).toEqual([]);
  });

  return { opened: () => opened, clock };
}
