import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseInstant } from "../../src/cli/options.js";

// Node applies a TZ assigned at run time to later Date conversions.
describe("--idle-since dates on a machine away from UTC", () => {
  const saved = process.env.TZ;
  beforeAll(() => {
    process.env.TZ = "America/New_York";
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  });

  it("reads a date-time without a zone as UTC, like a bare date", () => {
    expect(new Date("2025-01-31T00:00:00").getTimezoneOffset()).not.toBe(0); // the zone is really in effect
    expect(parseInstant("2025-01-31").toISOString()).toBe("2025-01-31T00:00:00.000Z");
    expect(parseInstant("2025-01-31T00:00:00").toISOString()).toBe("2025-01-31T00:00:00.000Z");
    expect(parseInstant("2025-01-31 12:30").toISOString()).toBe("2025-01-31T12:30:00.000Z");
  });

  it("keeps an explicit zone", () => {
    expect(parseInstant("2025-01-31T00:00:00Z").toISOString()).toBe("2025-01-31T00:00:00.000Z");
    expect(parseInstant("2025-01-31T01:00:00+01:00").toISOString()).toBe("2025-01-31T00:00:00.000Z");
  });
});
