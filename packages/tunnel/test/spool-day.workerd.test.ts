import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

import type { LogLine } from "../src/index.ts";
import { answerOf, tunnelFromEnv } from "./support/test-settings.ts";
import type { TestEnv } from "./support/test-settings.ts";
import type { SpooledEnvelope } from "../src/spool.ts";
import { TEST_DSN, EVERY_CLIENT, OTHER_TEST_DSN } from "./support/test-harness.ts";
import type { TunnelWorker } from "../src/index.ts";

/**
 * The spool through whole days on a simulated clock, in workerd (Cloudflare's vitest integration):
 * the tunnel and its spool as `createTunnel` builds them, with the clock, the randomness,
 * Sentry (`fetch`) and the queue replaced, and Miniflare's own R2. Envelopes are posted to the
 * tunnel while Sentry is down, so that the tunnel stores them; then the queue runs in due order,
 * and Sentry answers as each scenario says at each simulated moment.
 */

const bucket = (env as unknown as { TUNNEL_SPOOL_BUCKET: R2Bucket }).TUNNEL_SPOOL_BUCKET;

/** What Sentry answers from `fromH` to `toH` hours after the envelopes were stored. */
interface Trouble {
  fromH: number;
  toH: number;
  answer: "503" | "unreachable" | "429";
  retryAfterSeconds?: number;
}

interface Scenario {
  envelopes: number;
  /** Every this many envelopes, one too large for a message (it goes to R2), the first after the breaker opened. */
  largeEvery: number;
  trouble: Trouble[];
  /** The DSNs allowed when the queue runs (a deploy may have changed them); the envelopes are all for `storedFor`, allowed when they came. */
  allowed: string[];
  storedFor: string;
  ownDsn?: string;
}

interface Ledger {
  /** Envelopes the tunnel answered 202: stored. */
  stored: number;
  delivered: number;
  duplicated: number;
  outcomes: Record<string, number>;
  /** Quantities in the client reports Sentry took, by reason and category. */
  reported: Record<string, number>;
  reportsSent: number;
  r2ObjectsLeft: number;
  /** The age, in hours, at which the envelopes that expired were given up. */
  expiredAtHours: { min: number; max: number };
  maxTries: number;
  messagesAtEnd: number;
}

const START = Date.UTC(2027, 0, 1);
const HOUR = 3_600_000;
/** Envelopes arrive this far apart: all of them within the breaker's first cool-down, so that none is a probe. */
const ARRIVAL_MS = 50;

const BASE: Omit<Scenario, "trouble"> = { envelopes: 300, largeEvery: 10, allowed: [TEST_DSN], storedFor: TEST_DSN };

/** Some ten thousand queue steps a day: seconds on a quiet machine, more on a busy one. */
describe("a day of the spool, on a simulated clock", { timeout: 60_000 }, () => {
  async function replayed(scenario: Scenario): Promise<Ledger> {
    const ledger = await replay(scenario);
    console.log(`spool day: ${JSON.stringify({ trouble: scenario.trouble, ...ledger })}`);
    return ledger;
  }

  it("delivers every envelope once after a 23-hour outage of 503s and lost connections, however many tries it took", async () => {
    const ledger = await replayed({
      ...BASE,
      trouble: [
        { fromH: 0, toH: 12, answer: "503" },
        { fromH: 12, toH: 23, answer: "unreachable" },
      ],
    });
    expect(ledger).toMatchObject({ stored: 300, delivered: 300, duplicated: 0, r2ObjectsLeft: 0, messagesAtEnd: 0, reported: {} });
    expect(ledger.outcomes["delivered"]).toBe(300);
    expect(ledger.outcomes["expired"]).toBeUndefined();
    // Delivered more often than the queue's max_retries (5 by default) allows one message: sent
    // again as a new one each time, never dead-lettered.
    expect(ledger.maxTries).toBeGreaterThan(5);
    expect(ledger.outcomes["dead_lettered"]).toBeUndefined();
  });

  it("gives up on each envelope only at its 24 hours, deletes its R2 object, and tells Sentry how many", async () => {
    const ledger = await replayed({ ...BASE, trouble: [{ fromH: 0, toH: 30, answer: "503" }] });
    expect(ledger).toMatchObject({ stored: 300, delivered: 0, r2ObjectsLeft: 0, messagesAtEnd: 0 });
    expect(ledger.outcomes["expired"]).toBe(300);
    // At its 24 hours: the last wait is cut to end with them, to the second.
    expect(ledger.expiredAtHours.min).toBeGreaterThan(23.99);
    expect(ledger.expiredAtHours.max).toBeLessThan(24.5);
    // The reports wait out the outage too, then arrive, each count once. A body in R2 given up
    // while Sentry was down is not read just to be counted: one item of the default category.
    expect(Object.keys(ledger.reported).sort()).toEqual(["network_error/default", "network_error/error"]);
    expect(ledger.reported["network_error/default"]! + ledger.reported["network_error/error"]!).toBe(300);
  });

  it("loses nothing to a 30-minute 429 storm with Retry-After: 60", async () => {
    const ledger = await replayed({ ...BASE, trouble: [{ fromH: 0, toH: 0.5, answer: "429", retryAfterSeconds: 60 }] });
    expect(ledger).toMatchObject({ stored: 300, delivered: 300, duplicated: 0, r2ObjectsLeft: 0, reported: {} });
    expect(Object.keys(ledger.outcomes).sort()).toEqual(["delivered", "retried"]);
  });

  it("drops, and counts in the app's own project, what a DSN taken off the allow-list had stored", async () => {
    const ledger = await replayed({ ...BASE, envelopes: 20, allowed: [TEST_DSN], storedFor: OTHER_TEST_DSN, ownDsn: TEST_DSN, trouble: [] });
    expect(ledger).toMatchObject({ stored: 20, delivered: 0, r2ObjectsLeft: 0, outcomes: { not_allowed: 20 } });
    // A body in R2 is not read just to be counted: it counts as one item of the default category.
    expect(ledger.reported).toEqual({ "send_error/error": 18, "send_error/default": 2 });
  });
});

async function replay(scenario: Scenario): Promise<Ledger> {
  let now = START;
  const pending: { due: number; body: SpooledEnvelope; attempts: number }[] = [];
  const queue = {
    async send(body: SpooledEnvelope, options?: QueueSendOptions) {
      pending.push({ due: now + (options?.delaySeconds ?? 0) * 1000, body: structuredClone(body), attempts: 1 });
    },
  };
  const delivered = new Map<string, number>();
  const reported: Record<string, number> = {};
  let reportsSent = 0;
  const outcomes: Record<string, number> = {};
  const expiredAt: number[] = [];
  let maxTries = 0;
  /** While the envelopes are posted, Sentry is down: that is why the tunnel stores them. */
  let storing = true;

  const answerNow = (): Response | "unreachable" => {
    if (storing) return new Response("busy", { status: 503 });
    const hours = (now - START) / HOUR;
    const trouble = scenario.trouble.find(({ fromH, toH }) => hours >= fromH && hours < toH);
    if (!trouble) return new Response('{"id":"x"}', { status: 200 });
    if (trouble.answer === "unreachable") return "unreachable";
    if (trouble.answer === "503") return new Response("busy", { status: 503 });
    const after = String(trouble.retryAfterSeconds ?? 60);
    return new Response("", { status: 429, headers: { "retry-after": after, "x-sentry-rate-limits": `${after}::organization` } });
  };

  const sentry: typeof fetch = async (_url, init) => {
    const text = await new Response(init?.body).text();
    const answer = answerNow();
    if (answer === "unreachable") throw new TypeError("Network connection lost");
    if (answer.status === 200) {
      if (text.includes('{"type":"client_report"}')) {
        reportsSent += 1;
        const payload = JSON.parse(text.split("\n")[2]!) as { discarded_events: { reason: string; category: string; quantity: number }[] };
        for (const { reason, category, quantity } of payload.discarded_events) reported[`${reason}/${category}`] = (reported[`${reason}/${category}`] ?? 0) + quantity;
      } else {
        const id = eventIdOf(text);
        delivered.set(id, (delivered.get(id) ?? 0) + 1);
      }
    }
    return answer;
  };

  // Two deployments of one Worker: the one the envelopes came to, and the one whose queue runs, whose
  // allow-list may have changed since. Each is built as the Worker entry builds it.
  const runtime = {
    now: () => now,
    random: seededRandom(1),
    fetch: sentry,
    log: (line: LogLine) => {
      if (line.event === "tunnel_spool_batch") {
        // Envelopes that wait on are counted by their batch's line.
        if (line.retried > 0) outcomes["retried"] = (outcomes["retried"] ?? 0) + line.retried;
        if (line.deferred > 0) outcomes["deferred"] = (outcomes["deferred"] ?? 0) + line.deferred;
        return;
      }
      if (line.event !== "tunnel_spool") return;
      outcomes[line.outcome] = (outcomes[line.outcome] ?? 0) + 1;
      maxTries = Math.max(maxTries, line.tries);
      if (line.outcome === "expired") expiredAt.push(line.age_s / 3_600);
    },
  };
  const bindings = {
    TUNNEL_RATE_LIMITER: EVERY_CLIENT,
    TUNNEL_SPOOL_CLIENT_BUDGET: EVERY_CLIENT,
    TUNNEL_SPOOL_TOTAL_BUDGET: EVERY_CLIENT,
    TUNNEL_SPOOL: queue,
    TUNNEL_SPOOL_BUCKET: bucket,
  };
  const deployment = (variables: TestEnv) => tunnelFromEnv({ TUNNEL_UPSTREAM_ORIGIN: "http://sentry.invalid", ...variables, ...bindings }, runtime);
  const before = deployment({ SENTRY_DSN: scenario.storedFor, TUNNEL_ALLOWED_DSNS: scenario.allowed.join(",") });
  const after = deployment({ SENTRY_DSN: scenario.ownDsn ?? "", TUNNEL_ALLOWED_DSNS: scenario.allowed.join(",") });

  const storedAt = await postWhileSentryIsDown(before, scenario, () => now, (time) => (now = time));
  storing = false;

  // The queue, in due order: one message per batch, as a consumer with batches of one sees it.
  for (let steps = 0; pending.length > 0 && steps < 1_000_000; steps += 1) {
    pending.sort((a, b) => a.due - b.due);
    const next = pending.shift()!;
    now = Math.max(now, next.due);
    const message = {
      id: String(steps),
      timestamp: new Date(now),
      body: next.body,
      attempts: next.attempts,
      ack() {},
      retry(options?: QueueRetryOptions) {
        pending.push({ due: now + (options?.delaySeconds ?? 0) * 1000, body: next.body, attempts: next.attempts + 1 });
      },
    };
    await after.queue({ queue: "tunnel-spool", messages: [message], retryAll() {}, ackAll() {} } as unknown as MessageBatch<unknown>);
  }
  // Reports that waited for their period, or for Sentry to be back.
  now = Math.max(now, START + Math.max(0, ...scenario.trouble.map(({ toH }) => toH)) * HOUR) + HOUR;
  await after.clientShare.reports.flush();

  return {
    stored: storedAt.size,
    delivered: delivered.size,
    duplicated: [...delivered.values()].filter((count) => count > 1).length,
    outcomes,
    reported,
    reportsSent,
    r2ObjectsLeft: (await bucket.list({ prefix: "spool/" })).objects.length,
    expiredAtHours: { min: Math.min(...expiredAt, Infinity), max: Math.max(...expiredAt, -Infinity) },
    maxTries,
    messagesAtEnd: pending.length,
  };
}

/**
 * Posts the scenario's envelopes to the tunnel's route, {@link ARRIVAL_MS} apart, as a browser
 * would while Sentry is down; the large ones, which do not pack into a message, are stored in R2.
 * Returns when each stored one arrived, by event id.
 */
async function postWhileSentryIsDown(tunnel: TunnelWorker, scenario: Scenario, now: () => number, setNow: (time: number) => void): Promise<Map<string, number>> {
  const storedAt = new Map<string, number>();
  const route = tunnelFromEnv({ SENTRY_DSN: scenario.storedFor, TUNNEL_RATE_LIMITING: "off" }).describe().pages_post_to!;
  for (let index = 0; index < scenario.envelopes; index += 1) {
    setNow(START + index * ARRIVAL_MS);
    const id = crypto.randomUUID().replaceAll("-", "");
    const message = index % scenario.largeEvery === scenario.largeEvery - 1 ? hex(70_000) : "x".repeat(300);
    const body = new TextEncoder().encode(
      `${JSON.stringify({ dsn: scenario.storedFor, event_id: id, sent_at: new Date(now()).toISOString() })}\n{"type":"event"}\n{"event_id":"${id}","message":"${message}"}\n`,
    );
    const answer = await answerOf(tunnel, new Request(`https://app.example${route}`, { method: "POST", body, headers: { "content-length": String(body.byteLength) } }));
    await answer.body?.cancel();
    if (answer.status === 202) storedAt.set(id, now());
  }
  return storedAt;
}

/** Random bytes as hex: text that packs to about half, too large for a message still. */
function hex(bytes: number): string {
  const random = new Uint8Array(bytes);
  for (let at = 0; at < bytes; at += 65_536) crypto.getRandomValues(random.subarray(at, at + 65_536));
  return Array.from(random, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function eventIdOf(envelope: string): string {
  return (JSON.parse(envelope.slice(0, envelope.indexOf("\n"))) as { event_id: string }).event_id;
}

/** A generator of the same numbers on every run, for the spool's jitter. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}
