import { describe, expect, it } from "vitest";

import { SentryLimits } from "./sentry-limits.ts";

const DSN = "https://k@o1.ingest.sentry.io/2";
const NOW = 1_000_000;

/** A clock the test moves. */
function clock() {
  let now = NOW;
  return { now: () => now, at: (time: number) => void (now = time) };
}

describe("SentryLimits", () => {
  it("holds only the limited categories, and only for the DSN that was limited", () => {
    const time = clock();
    const limits = new SentryLimits(time.now);
    limits.record(DSN, 429, new Headers({ "x-sentry-rate-limits": "60:error;transaction:organization" }));
    expect(limits.refusal(DSN, () => ["event"])).toEqual({ "retry-after": "60", "x-sentry-rate-limits": "60:error:key, 60:transaction:key" });
    time.at(NOW + 30_000);
    expect(limits.refusal(DSN, () => ["event", "transaction"])?.["retry-after"]).toBe("30");
    time.at(NOW);
    expect(limits.refusal(DSN, () => ["event", "log"])).toBeUndefined();
    expect(limits.refusal(DSN, () => undefined)).toBeUndefined();
    expect(limits.refusal("https://k@o1.ingest.sentry.io/3", () => ["event"])).toBeUndefined();
    time.at(NOW + 60_000);
    expect(limits.refusal(DSN, () => ["event"])).toBeUndefined();
  });

  it("takes a bare Retry-After, or a 429 with neither header, as a limit on every category", () => {
    const time = clock();
    const limits = new SentryLimits(time.now);
    limits.record(DSN, 429, new Headers({ "retry-after": "5" }));
    expect(limits.refusal(DSN, () => undefined)?.["retry-after"]).toBe("5");
    expect(limits.refusal(DSN, () => ["log"])?.["x-sentry-rate-limits"]).toBe("5::key");
    const bare = new SentryLimits(time.now);
    bare.record(DSN, 429, new Headers());
    expect(bare.refusal(DSN, () => ["event"])?.["retry-after"]).toBe("60");
  });

  it("ignores answers that are not limits, and item types that are not categories", () => {
    const time = clock();
    const limits = new SentryLimits(time.now);
    limits.record(DSN, 200, new Headers({ "retry-after": "60" }));
    expect(limits.refusal(DSN, () => ["event"])).toBeUndefined();
    limits.record(DSN, 429, new Headers({ "x-sentry-rate-limits": "60:error:key" }));
    expect(limits.refusal(DSN, () => ["__proto__"])).toBeUndefined();
    expect(limits.refusal(DSN, () => ["constructor", "event"])).toBeUndefined();
  });
});
