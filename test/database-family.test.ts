// databaseFamily: the one rule fromUrl, the transfer sources and the CLI read a URL's database by.
import { describe, expect, it } from "vitest";
import { databaseFamily } from "../src/database-family.js";
import { InvalidInputError } from "../src/index.js";

describe("databaseFamily", () => {
  it("reads each scheme, in any case", () => {
    expect(databaseFamily("postgres://u:p@h:5432/db")).toBe("postgres");
    expect(databaseFamily("postgresql://h/db")).toBe("postgres");
    expect(databaseFamily("POSTGRESQL://h/db")).toBe("postgres");
    expect(databaseFamily("mysql://u:p@h:3306/db")).toBe("mysql");
    expect(databaseFamily("mariadb://u:p@h:3306/db")).toBe("mysql");
    expect(databaseFamily("MariaDB://h/db")).toBe("mysql");
    expect(databaseFamily("file:///tmp/x.db")).toBe("sqlite");
    expect(databaseFamily("file:x.db")).toBe("sqlite");
    expect(databaseFamily("FILE:x.db")).toBe("sqlite");
  });

  it("takes a path, a Windows path and :memory: as SQLite", () => {
    expect(databaseFamily("x.db")).toBe("sqlite");
    expect(databaseFamily("/tmp/dir/x.db")).toBe("sqlite");
    // One letter before the colon is a drive, not a scheme.
    expect(databaseFamily("C:\\x.db")).toBe("sqlite");
    expect(databaseFamily("c:/data/x.db")).toBe("sqlite");
    expect(databaseFamily(":memory:")).toBe("sqlite");
    expect(databaseFamily("file::memory:")).toBe("sqlite");
  });

  it("refuses any other scheme with an InvalidInputError naming it", () => {
    expect(() => databaseFamily("redis://localhost:6379")).toThrow(InvalidInputError);
    expect(() => databaseFamily("redis://localhost:6379")).toThrow(/unsupported database URL scheme "redis:\/\/"/);
    expect(() => databaseFamily("sqlite:x.db")).toThrow(/unsupported database URL scheme "sqlite:\/\/"/);
    // Names of Object's prototype are schemes like any other.
    expect(() => databaseFamily("constructor://x")).toThrow(InvalidInputError);
  });
});
