import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../src/index.js";
import { nextChannelVersion } from "../../src/savers/write/versions.js";
import { convertVersions, toOurVersion, valueSuffix, ZERO_SUFFIX } from "../../src/transfer/versions.js";

describe("the official savers' integer versions in our form", () => {
  it("keep their order as text, also past 9 and against the versions our saver makes next", () => {
    const ours = [1, 2, 9, 10, 11, 100, 12345].map((n) => toOurVersion(n, ZERO_SUFFIX, "test"));
    expect([...ours].sort()).toEqual(ours);
    expect(nextChannelVersion(ours[ours.length - 1]) > ours[ours.length - 1]).toBe(true);
    expect(toOurVersion("7", ZERO_SUFFIX, "test")).toBe(toOurVersion(7, ZERO_SUFFIX, "test"));
    const already = nextChannelVersion(undefined);
    expect(toOurVersion(already, ZERO_SUFFIX, "test")).toBe(already);
  });

  it("map a version seen by a node to the very text of the channel's version when they are equal", () => {
    const { checkpoint, channelVersions } = convertVersions(
      { channel_versions: { a: 3, b: 5 }, versions_seen: { node: { a: 3, b: 4 } } },
      (channel) => (channel === "a" ? "1234567890123456" : ZERO_SUFFIX),
      "test",
    );
    expect(channelVersions.a).toBe(`${"3".padStart(32, "0")}.1234567890123456`);
    expect(checkpoint.versions_seen?.node.a).toBe(channelVersions.a);
    expect(checkpoint.versions_seen?.node.b).toBe(`${"4".padStart(32, "0")}.${ZERO_SUFFIX}`);
    expect((checkpoint.versions_seen?.node.b as string) < channelVersions.b).toBe(true);
  });

  it("give equal values the same suffix and different values different ones", () => {
    const bytes = (text: string) => new TextEncoder().encode(text);
    expect(valueSuffix("msgpack", bytes("x"))).toBe(valueSuffix("msgpack", bytes("x")));
    expect(valueSuffix("msgpack", bytes("x"))).not.toBe(valueSuffix("msgpack", bytes("y")));
    expect(valueSuffix("msgpack", bytes("x"))).toMatch(/^\d{16}$/);
  });

  it("refuse what is not a version", () => {
    for (const bad of [1.5, -1, "v2", null, {}]) {
      expect(() => toOurVersion(bad, ZERO_SUFFIX, "row")).toThrow(InvalidInputError);
    }
  });
});
