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

  it("opens after one failure and probes as often as it is told, for the spool's consumer, and closes with its partner's success", () => {
    const { breaker: live, at } = breakerAt();
    let now = 0;
    const consumer = new UpstreamBreaker(() => now, { failuresToOpen: 1, coolDownMs: 10_000 });
    consumer.pairWith(live);
    consumer.failed();
    expect(consumer.allows()).toBe(false);
    now = 10_000;
    expect(consumer.allows()).toBe(true);
    for (let failure = 0; failure < 3; failure += 1) at(10_000).failed();
    expect(at(10_001).allows()).toBe(false);
    // The consumer's probe finds Sentry back: the live path knows it at once, and the other way round.
    consumer.succeeded();
    expect(at(10_002).allows()).toBe(true);
    consumer.failed();
    live.succeeded();
    expect(consumer.allows()).toBe(true);
  });
});
