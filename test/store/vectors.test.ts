/**
 * Exact semantic search on every dialect and driver against a brute-force cosine over
 * the same vectors (the cases of vector-cases.ts).
 */
import { describe } from "vitest";
import { freshStore, TARGETS } from "../helpers/stores.js";
import { vectorSearchCases } from "./vector-cases.js";

describe.each(TARGETS)("exact semantic search on %s", (target) => {
  vectorSearchCases((options) => freshStore(target, options));
});
