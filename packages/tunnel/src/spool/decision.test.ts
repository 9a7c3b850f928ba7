import { describe, expect, it } from "vitest";

import { backoffSeconds, decideAfterAttempt, MAX_ENVELOPE_AGE_MS, type AttemptResult } from "./decision.ts";

const POLICY = { spoolRetrySeconds: 10 };
const HOUR = 3_600_000;
const middle = () => 0.5;

describe("decideAfterAttempt", () => {
  it.each<[string, AttemptResult, number, number, ReturnType<typeof decideAfterAttempt>]>([
    ["delivered", { kind: "delivered", status: 200 }, 3, HOUR, { action: "ack", outcome: "delivered" }],
    ["refused by Sentry", { kind: "refused", status: 400 }, 0, 0, { action: "drop", outcome: "dropped", discard: undefined }],
    ["the first 503", { kind: "unavailable", status: 503 }, 0, 0, { action: "retry", outcome: "retried", delaySeconds: 10, tries: 1 }],
    ["the fourth failure", { kind: "unavailable", status: null }, 3, HOUR, { action: "retry", outcome: "retried", delaySeconds: 80, tries: 4 }],
    ["the twentieth failure: an hour at most", { kind: "unavailable", status: 502 }, 19, 10 * HOUR, { action: "retry", outcome: "retried", delaySeconds: 3600, tries: 20 }],
    ["a failure 23.5 hours in: the retry comes just before the end", { kind: "unavailable", status: 503 }, 30, 23.5 * HOUR, { action: "retry", outcome: "retried", delaySeconds: 1800, tries: 31 }],
    ["a failure with no time left", { kind: "unavailable", status: 503 }, 30, MAX_ENVELOPE_AGE_MS - 500, { action: "drop", outcome: "expired", discard: "network_error" }],
    ["Sentry's 429: when it says, costing no try", { kind: "rate_limited", status: 429, retryAfterSeconds: 60 }, 5, HOUR, { action: "retry", outcome: "retried", delaySeconds: 60, tries: 5 }],
    ["the edge's memory of a 429: the same", { kind: "rate_limited", status: null, retryAfterSeconds: 1 }, 0, 0, { action: "retry", outcome: "retried", delaySeconds: 1, tries: 0 }],
  ])("%s", (_name, result, tries, age, verdict) => {
    expect(decideAfterAttempt(result, tries, age, POLICY, middle)).toEqual(verdict);
  });

  it("never gives up before 24 hours, and never retries after: a whole outage, try by try", () => {
    for (const random of [() => 0, () => 0.5, () => 0.999]) {
      let age = 0;
      let tries = 0;
      for (;;) {
        const verdict = decideAfterAttempt({ kind: "unavailable", status: 503 }, tries, age, POLICY, random);
        if (verdict.action !== "retry") {
          expect(verdict).toMatchObject({ outcome: "expired" });
          break;
        }
        age += verdict.delaySeconds * 1000;
        tries = verdict.tries;
        expect(age).toBeLessThanOrEqual(MAX_ENVELOPE_AGE_MS);
      }
      expect(age).toBeGreaterThan(MAX_ENVELOPE_AGE_MS - 1000);
    }
  });

  it("spends no try however long Sentry's 429 lasts", () => {
    let age = 0;
    let verdict = decideAfterAttempt({ kind: "rate_limited", status: 429, retryAfterSeconds: 60 }, 0, age, POLICY);
    for (let minute = 0; minute < 30; minute += 1) {
      expect(verdict).toMatchObject({ action: "retry", tries: 0 });
      if (verdict.action === "retry") age += verdict.delaySeconds * 1000;
      verdict = decideAfterAttempt({ kind: "rate_limited", status: 429, retryAfterSeconds: 60 }, 0, age, POLICY);
    }
    expect(decideAfterAttempt({ kind: "delivered", status: 200 }, 0, age, POLICY)).toMatchObject({ action: "ack" });
  });
});

describe("backoffSeconds", () => {
  it("doubles from the first delay, caps at an hour, with jitter of 0.5 to 1.5", () => {
    expect([1, 2, 3, 9, 10, 30].map((tries) => backoffSeconds(tries, POLICY, middle))).toEqual([10, 20, 40, 2560, 3600, 3600]);
    expect(backoffSeconds(1, POLICY, () => 0)).toBe(5);
    expect(backoffSeconds(30, POLICY, () => 0.999)).toBe(5396);
  });
});
