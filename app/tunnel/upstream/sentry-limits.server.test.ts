import { describe, expect, it } from "vitest";

import { SentryLimits } from "./sentry-limits.server";

const DSN = "https://k@o1.ingest.sentry.io/2";
const NOW = 1_000_000;

describe("SentryLimits", () => {
  it("holds only the limited categories, and only for the DSN that was limited", () => {
    const limits = new SentryLimits();
    limits.record(DSN, 429, new Headers({ "x-sentry-rate-limits": "60:error;transaction:organization" }), NOW);
    expect(limits.refusal(DSN, () => ["event"], NOW)).toEqual({ "retry-after": "60", "x-sentry-rate-limits": "60:error:key, 60:transaction:key" });
    expect(limits.refusal(DSN, () => ["event", "transaction"], NOW + 30_000)?.["retry-after"]).toBe("30");
    expect(limits.refusal(DSN, () => ["event", "log"], NOW)).toBeUndefined();
    expect(limits.refusal(DSN, () => undefined, NOW)).toBeUndefined();
    expect(limits.refusal("https://k@o1.ingest.sentry.io/3", () => ["event"], NOW)).toBeUndefined();
    expect(limits.refusal(DSN, () => ["event"], NOW + 60_000)).toBeUndefined();
  });

  it("takes a bare Retry-After, or a 429 with neither header, as a limit on every category", () => {
    const limits = new SentryLimits();
    limits.record(DSN, 429, new Headers({ "retry-after": "5" }), NOW);
    expect(limits.refusal(DSN, () => undefined, NOW)?.["retry-after"]).toBe("5");
    expect(limits.refusal(DSN, () => ["log"], NOW)?.["x-sentry-rate-limits"]).toBe("5::key");
    const bare = new SentryLimits();
    bare.record(DSN, 429, new Headers(), NOW);
    expect(bare.refusal(DSN, () => ["event"], NOW)?.["retry-after"]).toBe("60");
  });

  it("ignores answers that are not limits, and item types that are not categories", () => {
    const limits = new SentryLimits();
    limits.record(DSN, 200, new Headers({ "retry-after": "60" }), NOW);
    expect(limits.refusal(DSN, () => ["event"], NOW)).toBeUndefined();
    limits.record(DSN, 429, new Headers({ "x-sentry-rate-limits": "60:error:key" }), NOW);
    expect(limits.refusal(DSN, () => ["__proto__"], NOW)).toBeUndefined();
    expect(limits.refusal(DSN, () => ["constructor", "event"], NOW)).toBeUndefined();
  });
});
