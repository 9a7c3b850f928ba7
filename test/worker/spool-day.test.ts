import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { APP_DSN } from "../support/worker";
import { startFixture, type Workerd } from "../support/workerd";
import type { Ledger, Scenario } from "./fixtures/spool-day";

/**
 * The spool through whole days on a simulated clock, in workerd: the tunnel and its spool as
 * `createTunnelWorker` builds them, the envelopes posted to it while Sentry is down, the real R2
 * binding, and a Sentry that answers as each scenario says hour by hour.
 */

const OTHER_DSN = "https://fedcba9876543210fedcba9876543210@o4501.ingest.us.sentry.io/4503";
const BASE: Omit<Scenario, "trouble"> = { envelopes: 300, largeEvery: 10, allowed: [APP_DSN], storedFor: APP_DSN };

describe("a day of the spool, on a simulated clock", () => {
  let worker: Workerd;
  beforeAll(async () => {
    worker = await startFixture("test/worker/fixtures/spool-day.ts", { r2Buckets: ["BUCKET"] });
  });
  afterAll(() => worker?.dispose());

  async function replay(scenario: Scenario): Promise<Ledger> {
    const ledger = await worker.call<Ledger>("/", scenario);
    console.log(`spool day: ${JSON.stringify({ trouble: scenario.trouble, ...ledger })}`);
    return ledger;
  }

  it("delivers every envelope once after a 23-hour outage of 503s and lost connections, however many tries it took", async () => {
    const ledger = await replay({
      ...BASE,
      trouble: [
        { fromH: 0, toH: 12, answer: "503" },
        { fromH: 12, toH: 23, answer: "unreachable" },
      ],
    });
    expect(ledger).toMatchObject({ stored: 300, delivered: 300, duplicated: 0, r2ObjectsLeft: 0, messagesAtEnd: 0, reported: {} });
    expect(ledger.outcomes.delivered).toBe(300);
    expect(ledger.outcomes.expired).toBeUndefined();
    // More tries than the 30 the queue's max_retries once allowed.
    expect(ledger.maxTries).toBeGreaterThan(30);
  });

  it("gives up on each envelope only at its 24 hours, deletes its R2 object, and tells Sentry how many", async () => {
    const ledger = await replay({ ...BASE, trouble: [{ fromH: 0, toH: 30, answer: "503" }] });
    expect(ledger).toMatchObject({ stored: 300, delivered: 0, r2ObjectsLeft: 0, messagesAtEnd: 0 });
    expect(ledger.outcomes.expired).toBe(300);
    expect(ledger.lastAttemptHours.min).toBeGreaterThan(23);
    expect(ledger.lastAttemptHours.max).toBeLessThanOrEqual(24);
    // The reports wait out the outage too, then arrive, each count once.
    expect(ledger.reported).toEqual({ "network_error/error": 300 });
  });

  it("loses nothing to a 30-minute 429 storm with Retry-After: 60, and spends no try on it", async () => {
    const ledger = await replay({ ...BASE, trouble: [{ fromH: 0, toH: 0.5, answer: "429", retryAfterSeconds: 60 }] });
    expect(ledger).toMatchObject({ stored: 300, delivered: 300, duplicated: 0, r2ObjectsLeft: 0, maxTries: 0, reported: {} });
  });

  it("drops, and counts in the app's own project, what a DSN taken off the allow-list had stored", async () => {
    const ledger = await replay({ ...BASE, envelopes: 20, allowed: [APP_DSN], storedFor: OTHER_DSN, ownDsn: APP_DSN, trouble: [] });
    expect(ledger).toMatchObject({ stored: 20, delivered: 0, r2ObjectsLeft: 0, outcomes: { not_allowed: 20 } });
    // A body in R2 is not read just to be counted: it counts as one item of the default category.
    expect(ledger.reported).toEqual({ "send_error/error": 18, "send_error/default": 2 });
  });
});
