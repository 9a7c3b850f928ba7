import * as current from "@sentry/core";
import * as next from "sentry-core-11";
import { describe, expect, it } from "vitest";

import { TEST_DSN } from "../testing/harness.ts";
import { discardedCategories, KNOWN_ITEM_TYPES, RELAY_CATEGORIES } from "./client-reports.ts";

/**
 * The package takes `@sentry/core` as a peer, `^10 || ^11`, so that an app on either line installs
 * one copy; it uses four of its functions to speak Sentry's protocol. These hold both lines to the
 * same output for what the tunnel asks of them, so that the range promises nothing untested.
 */
describe("@sentry/core's protocol functions, on both lines the peer range allows (10 and 11)", () => {
  const lines = [
    ["10", current],
    ["11", next],
  ] as const;

  it("give every item type the tunnel reads the same data category, but where the tunnel says Relay's own", () => {
    const categories = (sdk: typeof current | typeof next) => [...KNOWN_ITEM_TYPES].map((type) => RELAY_CATEGORIES[type] ?? sdk.envelopeItemTypeToDataCategory(type as never));
    expect(categories(next)).toEqual(categories(current));
    // Relay's, which the newer line says too: the older one's would be counted under another name.
    for (const [type, category] of Object.entries(RELAY_CATEGORIES)) {
      expect(next.envelopeItemTypeToDataCategory(type as never)).toBe(category);
      expect(discardedCategories(new TextEncoder().encode(`{}\n{"type":"${type}"}\n{}\n`))).toEqual([category]);
    }
  });

  it("read Sentry's rate-limit headers and 429 into the same limits", () => {
    const answers = [
      { statusCode: 429, headers: { "x-sentry-rate-limits": null, "retry-after": "37" } },
      { statusCode: 429, headers: { "x-sentry-rate-limits": "60:error;transaction:organization:quota, 2700::project", "retry-after": null } },
      { statusCode: 200, headers: { "x-sentry-rate-limits": "120:replay:key:replay_quota:custom", "retry-after": null } },
      { statusCode: 429, headers: { "x-sentry-rate-limits": null, "retry-after": "Wed, 02 Dec 2026 10:00:00 GMT" } },
    ];
    const now = Date.UTC(2026, 11, 2, 9, 59, 0);
    for (const answer of answers) {
      const [a, b] = lines.map(([, sdk]) => sdk.updateRateLimits({}, answer, now));
      expect(b, JSON.stringify(answer)).toEqual(a);
    }
  });

  it("write a client report envelope byte for byte alike", () => {
    const discarded = [
      { reason: "ratelimit_backoff", category: "error", quantity: 3 },
      { reason: "network_error", category: "security", quantity: 1 },
    ];
    const [a, b] = lines.map(([, sdk]) => sdk.serializeEnvelope(sdk.createClientReportEnvelope(discarded as never, TEST_DSN, 1_795_000_000) as never));
    expect(b).toEqual(a);
  });
});
