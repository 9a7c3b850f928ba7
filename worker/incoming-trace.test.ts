import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { ownTrace, type OwnTraceSettings } from "./incoming-trace";

const TRACE_ID = "0123456789abcdef0123456789abcdef";
const SPAN_ID = "0123456789abcdef";
const OWN: OwnTraceSettings = { environment: "production", release: "abc123", publicKey: "k1", sampleRate: 0.25 };

function baggageOf(header: string): Record<string, string> {
  return Object.fromEntries(header.split(",").map((member) => member.split("=").map(decodeURIComponent) as [string, string]));
}

describe("ownTrace", () => {
  it("leaves a request without sentry-trace alone", () => {
    expect(ownTrace(null, "sentry-sample_rand=0", OWN)).toEqual({ kind: "absent" });
  });

  it.each(["", "garbage", `${TRACE_ID}`, `${TRACE_ID.toUpperCase()}-${SPAN_ID}-1`, `${TRACE_ID}-${SPAN_ID}-2`, `${TRACE_ID}-${SPAN_ID}-1\nx`])(
    "drops a sentry-trace that is not one: %j",
    (header) => {
      expect(ownTrace(header, null, OWN)).toEqual({ kind: "dropped" });
    },
  );

  it("decides from the client's sample_rand against the Worker's own rate, whatever the client's flag says", () => {
    const below = ownTrace(`${TRACE_ID}-${SPAN_ID}-0`, "sentry-sample_rand=0.1", OWN);
    const above = ownTrace(`${TRACE_ID}-${SPAN_ID}-1`, "sentry-sample_rand=0.9,sentry-sample_rate=1,sentry-sampled=true", OWN);
    expect(below).toMatchObject({ kind: "continued", sentryTrace: `${TRACE_ID}-${SPAN_ID}-1`, sampled: true });
    expect(above).toMatchObject({ kind: "continued", sentryTrace: `${TRACE_ID}-${SPAN_ID}-0`, sampled: false });
  });

  it("draws afresh when the client gives no usable sample_rand", () => {
    for (const baggage of [null, "sentry-sample_rand=1", "sentry-sample_rand=-0.1", "sentry-sample_rand=1e-9", "sentry-sample_rand=NaN", `sentry-sample_rand=0.1,${"x".repeat(9000)}`]) {
      expect(ownTrace(`${TRACE_ID}-${SPAN_ID}-1`, baggage, OWN, () => 0.5)).toMatchObject({ sampled: false });
      expect(ownTrace(`${TRACE_ID}-${SPAN_ID}-1`, baggage, OWN, () => 0.1)).toMatchObject({ sampled: true });
    }
  });

  it("rebuilds the sampling context from the Worker's own settings, never the client's", () => {
    const client = "sentry-environment=evil,sentry-release=evil,sentry-public_key=evil,sentry-sample_rate=1,sentry-transaction=evil,sentry-sample_rand=0.2,other=kept%3F";
    const trace = ownTrace(`${TRACE_ID}-${SPAN_ID}-1`, client, { ...OWN, release: "a b,c" });
    if (trace.kind !== "continued") throw new Error("not continued");
    expect(baggageOf(trace.baggage)).toEqual({
      "sentry-trace_id": TRACE_ID,
      "sentry-sample_rand": "0.2",
      "sentry-sample_rate": "0.25",
      "sentry-sampled": "true",
      "sentry-environment": "production",
      "sentry-release": "a b,c",
      "sentry-public_key": "k1",
    });
  });

  it("never samples at rate 0, and samples everything at rate 1", () => {
    fc.assert(
      fc.property(fc.string(), fc.boolean(), (baggage, flag) => {
        const header = `${TRACE_ID}-${SPAN_ID}-${flag ? 1 : 0}`;
        expect(ownTrace(header, `sentry-sample_rand=${baggage}`, { ...OWN, sampleRate: 0 })).toMatchObject({ sampled: false });
        expect(ownTrace(header, `sentry-sample_rand=${baggage}`, { ...OWN, sampleRate: 1 })).toMatchObject({ sampled: true });
      }),
      { numRuns: 300 },
    );
  });
});
