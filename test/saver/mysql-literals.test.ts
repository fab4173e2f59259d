import { describe, expect, it } from "vitest";
import { inlineParameters, mysqlLiteral, mysqlLiteralLength } from "../../src/sql/mysql-literals.js";

/** The literals the MySQL executor writes in place of mysql2's backslash escaping (see sql-mode.test.ts). */
describe("MySQL literals", () => {
  it("write text and bytes as hexadecimal, with no quote or backslash of the value", () => {
    expect(mysqlLiteral("\\' or 1=1 -- ")).toBe("_utf8mb4 X'5c27206f7220313d31202d2d20'");
    expect(mysqlLiteral(Buffer.from([0, 255]))).toBe("X'00ff'");
    expect(mysqlLiteral("")).toBe("_utf8mb4 X''");
    expect([mysqlLiteral(null), mysqlLiteral(-1.5), mysqlLiteral(12n), mysqlLiteral(true)]).toEqual([
      "NULL",
      "-1.5",
      "12",
      "true",
    ]);
    expect(() => mysqlLiteral(Number.NaN)).toThrow(TypeError);
    expect(() => mysqlLiteral({})).toThrow(TypeError);
    for (const value of ["é€😀", Buffer.alloc(3), 42])
      expect(mysqlLiteralLength(value)).toBe(mysqlLiteral(value).length);
  });

  it("replace only the statement's own placeholders, never a ? inside quotes or comments", () => {
    const query = {
      sql: "select `a?b`, 'c?d', \"e?f\" from t -- x?\nwhere x = ? and y = ? /* ? */ # ?\n",
      params: ["?", 1],
    };
    expect(inlineParameters(query)).toEqual({
      sql: "select `a?b`, 'c?d', \"e?f\" from t -- x?\nwhere x = _utf8mb4 X'3f' and y = 1 /* ? */ # ?\n",
      params: [],
    });
    expect(() => inlineParameters({ sql: "select ?", params: [1, 2] })).toThrow(/fewer placeholders/);
    expect(() => inlineParameters({ sql: "select ?, ?", params: [1] })).toThrow(/more placeholders/);
  });
});
