/**
 * sqlite-vec is an optional peer dependency: a store asking for the native index on
 * better-sqlite3 without it gets a MissingPackageError naming the package, at setup().
 */
import { expect, it, vi } from "vitest";
import { MissingPackageError } from "../../src/index.js";
import { freshStore } from "../helpers/stores.js";

vi.mock("sqlite-vec", () => {
  throw new Error("Cannot find package 'sqlite-vec'");
});

it("names sqlite-vec when it is not installed", async () => {
  const embed = async (texts: string[]) => texts.map(() => [1, 0]);
  const failed = freshStore("sqlite", { index: { dims: 2, embed, native: true } });
  await expect(failed).rejects.toThrow(MissingPackageError);
  await expect(failed).rejects.toThrow(/npm install sqlite-vec/);
  await expect(failed).rejects.toMatchObject({ packages: ["sqlite-vec"] });
});
