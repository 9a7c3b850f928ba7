import { describe, expect, it } from "vitest";

import { UpstreamBreaker } from "./breaker.ts";

/** A breaker on a clock the test sets. */
function breakerAt() {
  let now = 0;
  const breaker = new UpstreamBreaker(() => now);
  return { breaker, at: (time: number) => ((now = time), breaker) };
}

describe("UpstreamBreaker", () => {
  it("opens after three failures in a row, lets one probe through per 30 s, and closes on a success", () => {
    const { breaker, at } = breakerAt();
    breaker.failed();
    breaker.failed();
    expect(breaker.allows()).toBe(true);
    breaker.failed();
    expect(at(1_000).allows()).toBe(false);
    expect(at(29_999).allows()).toBe(false);
    expect(at(30_000).allows()).toBe(true);
    expect(at(30_001).allows()).toBe(false);
    breaker.succeeded();
    expect(at(30_002).allows()).toBe(true);
  });

  it("does not open on failures that a success interrupts", () => {
    const { breaker } = breakerAt();
    for (let round = 0; round < 5; round += 1) {
      breaker.failed();
      breaker.failed();
      breaker.succeeded();
    }
    expect(breaker.allows()).toBe(true);
  });

  it("says how long Sentry has been failing while it is open, from the first failure of the run", () => {
    const { breaker, at } = breakerAt();
    at(1_000).failed();
    at(2_000).failed();
    expect(breaker.failingForMs()).toBe(0);
    at(3_000).failed();
    expect(at(63_000).failingForMs()).toBe(62_000);
    breaker.succeeded();
    expect(breaker.failingForMs()).toBe(0);
  });
});
