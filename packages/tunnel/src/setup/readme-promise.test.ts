import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { SMALL_BODY_BYTES } from "../stages/receive.ts";
import { MAX_BACKOFF_SECONDS, MAX_ENVELOPE_AGE_MS } from "../spool/decision.ts";
import { SPOOL_DEFAULTS } from "../spool/defaults.ts";
import { InHandBudget } from "../spool/in-hand.ts";

const README = readFileSync(`${import.meta.dirname}/../../README.md`, "utf8");
const MiB = 1024 * 1024;

/** The README's paragraph that tells an adopter what the spool keeps, as one line. */
function paragraph(opening: string): string {
  const start = README.indexOf(opening);
  expect(start, `the README has no paragraph "${opening}"`).toBeGreaterThan(-1);
  return README.slice(start, README.indexOf("\n\n", start)).replace(/\s+/g, " ");
}

describe("the package README's promise, held to the defaults it describes", () => {
  const promise = paragraph("**What the spool keeps, and what it cannot.**");
  const said = (pattern: RegExp) => {
    const figure = pattern.exec(promise)?.[1];
    expect(figure, `the promise no longer says ${pattern}`).toBeDefined();
    return Number(figure);
  };

  it("says how long and how often the consumer tries", () => {
    expect(said(/with backoff for up to (\d+) hours/)).toBe(MAX_ENVELOPE_AGE_MS / 3_600_000);
    expect(said(/the first retry waits `retrySeconds` \((\d+) s\)/)).toBe(SPOOL_DEFAULTS.retrySeconds);
    const longest = /each next twice as long, up to (an hour|\d+ minutes)/.exec(promise)?.[1];
    expect(longest === "an hour" ? 3_600 : Number.parseInt(longest ?? "", 10) * 60).toBe(MAX_BACKOFF_SECONDS);
  });

  it("says what is kept in hand of a streaming body, and what is not", () => {
    expect(said(/A body up to (\d+) KiB is read whole first/)).toBe(SMALL_BODY_BYTES / 1024);
    expect(said(/up to (\d+) MiB per isolate \(`inHandBytes`\)/)).toBe(SPOOL_DEFAULTS.inHandBytes / MiB);
    expect(said(/each body up to (\d+) MiB/)).toBe(new InHandBudget(SPOOL_DEFAULTS.inHandBytes).ceiling / MiB);
    expect(said(/that is over (\d+) MiB, finds/)).toBe(new InHandBudget(SPOOL_DEFAULTS.inHandBytes).ceiling / MiB);
    expect(said(/finds the isolate's (\d+) MiB held by others/)).toBe(SPOOL_DEFAULTS.inHandBytes / MiB);
  });
});
