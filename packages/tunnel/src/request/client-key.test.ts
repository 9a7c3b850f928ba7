import { describe, expect, it } from "vitest";

import { clientKey } from "./client-key.ts";

describe("clientKey", () => {
  it.each([
    [null, "unknown"],
    ["", "unknown"],
    ["203.0.113.9", "203.0.113.9"],
    ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["2001:0db8:0001:0002:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"],
    ["2001:DB8:1:2::1", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["::ffff:198.51.100.7", "198.51.100.7"],
    ["64:ff9b::198.51.100.7", "64:ff9b:0:0::/64"],
    ["x".repeat(500), "x".repeat(64)],
    ["1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8:9"],
    ["::1]@example.com/[", "::1]@example.com/["],
  ])("keys %j as %j", (ip, key) => {
    expect(clientKey(ip)).toBe(key);
  });

  it("gives every address of one /64 the same key, and the next /64 another", () => {
    const keys = new Set(["2001:db8:a:b::1", "2001:db8:a:b:ffff::", "2001:db8:a:b:1:2:3:4"].map(clientKey));
    expect(keys.size).toBe(1);
    expect(clientKey("2001:db8:a:c::1")).not.toBe(clientKey("2001:db8:a:b::1"));
  });
});
