import { describe, expect, it } from "vitest";

import { UpstreamBreaker } from "./breaker.server";

describe("UpstreamBreaker", () => {
  it("opens after three failures in a row, lets one probe through per 30 s, and closes on a success", () => {
    const breaker = new UpstreamBreaker();
    breaker.failed(0);
    breaker.failed(0);
    expect(breaker.allows(0)).toBe(true);
    breaker.failed(0);
    expect(breaker.allows(1_000)).toBe(false);
    expect(breaker.allows(29_999)).toBe(false);
    expect(breaker.allows(30_000)).toBe(true);
    expect(breaker.allows(30_001)).toBe(false);
    breaker.succeeded();
    expect(breaker.allows(30_002)).toBe(true);
  });

  it("does not open on failures that a success interrupts", () => {
    const breaker = new UpstreamBreaker();
    for (let round = 0; round < 5; round += 1) {
      breaker.failed(0);
      breaker.failed(0);
      breaker.succeeded();
    }
    expect(breaker.allows(0)).toBe(true);
  });
});
