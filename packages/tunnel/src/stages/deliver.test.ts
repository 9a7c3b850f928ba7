import { describe, expect, it, vi } from "vitest";

import { deliver } from "./deliver.ts";
import { KEEP_STAGE } from "./keep.ts";
import { receiveEnvelope } from "./receive.ts";
import { readTunnelSettings } from "../../test/support/test-settings.ts";
import { Deadline } from "../shared/deadline.ts";
import type { SpoolBudget } from "../spool/budget.ts";
import type { Spool } from "../spool/store.ts";
import { StubSentry, TEST_DSN } from "../testing/harness.ts";
import { compileAllowList } from "../upstream/allow-list.ts";
import type { ClientReports } from "../upstream/client-reports.ts";
import { upstreamStateOf } from "../upstream/state.ts";

const INGEST = "https://o4501.ingest.us.sentry.io/api/4502/envelope/";
const settings = readTunnelSettings({ SENTRY_DSN: TEST_DSN });
const BODY = `${JSON.stringify({ dsn: TEST_DSN })}\n{"type":"event"}\n{}\n`;

/** Sentry as the harness's stub: each request takes the next answer, a status or a network failure; then 200. */
function sentry(...answers: (number | "unreachable")[]): StubSentry {
  const stub = new StubSentry();
  stub.answer = ({ url }) => {
    const next = answers.shift() ?? 200;
    if (next === "unreachable") throw new TypeError("fetch failed");
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (next === 429) Object.assign(headers, { "retry-after": "60", "x-sentry-rate-limits": "60:error:key" });
    if (next === 302) headers["location"] = "https://elsewhere.example/";
    return new Response(next === 302 ? null : `{"id":"${url.length}"}`, { status: next, headers });
  };
  return stub;
}

function memorySpool() {
  const stored: { dsn: string; body: string }[] = [];
  const spool: Spool = {
    pack: async (envelope, body) => ({ envelope, body }),
    room: () => Number.POSITIVE_INFINITY,
    async store(envelope, body) {
      stored.push({ dsn: envelope.dsn, body: new TextDecoder().decode(body as Uint8Array) });
    },
  };
  return { spool, stored };
}

/**
 * One envelope through the delivery stage, as the tunnel passes it on once received: by default no
 * spool; given one (and its budget), the spool's part of the live path too. Each call is a tunnel of
 * its own, with its own breakers and memory of Sentry's limits.
 */
async function send({ fetch, reports = { count: () => {}, flush: async () => {} }, spool, spoolBudget = async () => true }: { fetch: typeof globalThis.fetch; reports?: ClientReports; spool?: Spool; spoolBudget?: SpoolBudget }, body = BODY) {
  const allowList = compileAllowList(settings.allowedDsns, undefined);
  const parts = spool && { ...upstreamStateOf(allowList, Date.now), reports, store: { spool, spoolBudget, deferral: () => 0 } };
  const keep = parts && { stage: KEEP_STAGE, parts };
  const delivery = { maxEnvelopeBytes: settings.maxEnvelopeBytes, reports, fetch, keep };
  return async () => {
    const request = new Request("https://app.example.com/monitoring?o=4501&p=4502&r=us", {
      method: "POST",
      body,
      headers: { "content-length": String(Buffer.byteLength(body)), "cf-connecting-ip": "203.0.113.9" },
    });
    const deadline = new Deadline(5_000);
    try {
      const received = await receiveEnvelope(request, deadline, { maxEnvelopeBytes: settings.maxEnvelopeBytes, allowList, inflate: undefined, readRest: undefined });
      if (!received.ok) throw new Error(`refused: ${received.answer.code}`);
      return await deliver(received.envelope, request.headers, deadline, delivery, Date.now());
    } finally {
      deadline.end();
    }
  };
}

describe("deliver, with Sentry and the spool as stubs", () => {
  it("forwards the body as it came to the DSN's ingest, and passes Sentry's answer on", async () => {
    const upstream = sentry(200);
    const delivered = await (await send({ fetch: upstream.fetch }))();
    expect(upstream.took[0]!.url).toMatch(new RegExp(`^${INGEST}`));
    expect(upstream.took.map((took) => new TextDecoder().decode(took.body))).toEqual([BODY]);
    expect(delivered).toMatchObject({ upstreamStatus: 200, bytes: Buffer.byteLength(BODY) });
    expect(delivered.answer).toMatchObject({ code: null, outcome: "forwarded" });
    expect(delivered.answer.response.status).toBe(200);
  });

  it.each([500, 501, 503, 505, 507])("stores what Sentry answers %i to, and answers 202: every 5xx is \"not now\", as for the spool's consumer", async (status) => {
    const { spool, stored } = memorySpool();
    const delivered = await (await send({ fetch: sentry(status).fetch, spool }))();
    expect(delivered.answer).toMatchObject({ code: "spooled", outcome: "spooled" });
    expect(delivered.answer.response.status).toBe(202);
    expect(stored).toEqual([{ dsn: TEST_DSN, body: BODY }]);
  });

  it("opens the breaker after three failures: the next envelope is stored without asking Sentry", async () => {
    const { spool, stored } = memorySpool();
    const upstream = sentry("unreachable", "unreachable", "unreachable");
    const next = await send({ fetch: upstream.fetch, spool });
    for (let failure = 0; failure < 3; failure += 1) expect((await next()).answer.code).toBe("spooled");
    expect((await next()).answer.code).toBe("spooled");
    expect(upstream.arrivals).toBe(3);
    expect(stored).toHaveLength(4);
  });

  it("passes Sentry's 5xx and 429 on when no spool is bound, with the rate limits the SDK keeps, and asks Sentry again", async () => {
    const upstream = sentry(429, 503);
    const next = await send({ fetch: upstream.fetch });
    const limited = await next();
    expect(limited).toMatchObject({ upstreamStatus: 429, answer: { code: null, outcome: "forwarded" } });
    expect(limited.answer.response.headers.get("x-sentry-rate-limits")).toBe("60:error:key");
    expect(await next()).toMatchObject({ upstreamStatus: 503, answer: { code: null, outcome: "forwarded" } });
    expect(upstream.arrivals).toBe(2);
  });

  it("holds Sentry's 429 at the edge with a spool, and counts what it holds back for Sentry's client reports", async () => {
    const reports = { count: vi.fn(), flush: vi.fn(async () => {}) };
    const upstream = sentry(429);
    const next = await send({ fetch: upstream.fetch, reports, spool: memorySpool().spool });
    expect((await next()).answer.response.status).toBe(429);
    const held = await next();
    expect(held.answer.code).toBe("sentry_rate_limited");
    expect(held.answer.response.headers.get("x-sentry-rate-limits")).toMatch(/^\d+:error:key$/);
    expect(upstream.arrivals).toBe(1);
    expect(reports.count).toHaveBeenCalledWith(TEST_DSN, "ratelimit_backoff", ["error"]);
  });

  it("answers 503 spool_full past the client's byte budget, stores nothing, and counts the drop", async () => {
    const { spool, stored } = memorySpool();
    const reports = { count: vi.fn(), flush: vi.fn(async () => {}) };
    const spoolBudget = vi.fn(async () => false);
    const delivered = await (await send({ fetch: sentry(503).fetch, spool, spoolBudget, reports }))();
    expect(delivered.answer.code).toBe("spool_full");
    expect(delivered.answer.response.headers.get("retry-after")).toBe("60");
    expect(spoolBudget).toHaveBeenCalledWith("203.0.113.9", Buffer.byteLength(BODY), expect.any(Function));
    expect(stored).toEqual([]);
    expect(reports.count).toHaveBeenCalledWith(TEST_DSN, "queue_overflow", ["error"]);
  });

  it("counts against the byte budget what is kept: the body packed, when it packs", async () => {
    const { spool } = memorySpool();
    spool.pack = async (envelope) => ({ envelope: { ...envelope, packed: "gzip" }, body: new Uint8Array(7) });
    const spoolBudget = vi.fn(async () => true);
    await (await send({ fetch: sentry(503).fetch, spool, spoolBudget }))();
    expect(spoolBudget).toHaveBeenCalledWith("203.0.113.9", 7, expect.any(Function));
  });

  it("follows no redirect and stores nothing for one", async () => {
    const { spool, stored } = memorySpool();
    const delivered = await (await send({ fetch: sentry(302).fetch, spool }))();
    expect(delivered.answer).toMatchObject({ code: "upstream_redirect", outcome: "failed" });
    expect(delivered.answer.response.status).toBe(502);
    expect(stored).toEqual([]);
  });
});
