import { describe, expect, it } from "vitest";

import { fateOfFailure, fateOfStatus } from "./fate.ts";

describe("the fate of an envelope, by Sentry's answer", () => {
  it.each([
    [200, "delivered"],
    [204, "delivered"],
    [429, "rate_limited"],
    [500, "unavailable"],
    [501, "unavailable"],
    [503, "unavailable"],
    [505, "unavailable"],
    [507, "unavailable"],
    [599, "unavailable"],
    [301, "refused"],
    [400, "refused"],
    [403, "refused"],
    [413, "refused"],
  ] as const)("%i is %s", (status, fate) => {
    expect(fateOfStatus(status)).toBe(fate);
  });

  it.each([
    ["upstream_unreachable", "unavailable"],
    ["upstream_timeout", "unavailable"],
    ["upstream_redirect", "refused"],
    ["body_timeout", "client_failed"],
    ["body_incomplete", "client_failed"],
    ["envelope_too_large", "client_failed"],
  ] as const)("an envelope Sentry did not answer, %s, is %s", (reason, fate) => {
    expect(fateOfFailure(reason)).toBe(fate);
  });
});
