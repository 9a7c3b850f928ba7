import { gzipSync } from "node:zlib";

import { describe, expect, it } from "vitest";

import { compressedBodies } from "../src/compressed.ts";
import { answerOf } from "./support/test-settings.ts";
import { createTunnel, type TunnelWorker } from "../src/index.ts";
import { optionsFromEnv } from "../src/index.ts";
import { spool } from "../src/spool.ts";
import type { SpooledEnvelope } from "../src/spool.ts";
import { configRefusal, envelope, EVERY_CLIENT, OTHER_TEST_DSN, StubSentry, TEST_DSN } from "../src/testing/harness.ts";

const APP = "https://app.example.com";

function post(tunnel: { handle(request: Request): Promise<Response | undefined> }, path: string, dsn: string) {
  const { body } = envelope({ dsn });
  return tunnel.handle(new Request(`${APP}${path}`, { method: "POST", body, headers: { "content-length": String(body.byteLength) } }));
}

describe("createTunnel: the tunnel from typed options and binding objects", () => {
  it("runs two tunnels in one Worker, each with its own route, DSN, limiter and spool queue", async () => {
    const sentry = new StubSentry();
    const stored: Record<"production" | "staging", SpooledEnvelope[]> = { production: [], staging: [] };
    const spoolOf = (name: "production" | "staging") => ({
      queue: { send: async (message: SpooledEnvelope) => void stored[name].push(message) },
      clientBudget: EVERY_CLIENT,
      totalBudget: EVERY_CLIENT,
      queueName: `${name}-spool`,
      deadLetterQueueName: `${name}-spool-dead`,
    });
    const runtime = { fetch: sentry.fetch, log: () => {} };
    const production = createTunnel({ dsn: TEST_DSN, route: "/k7q2x9", limiter: EVERY_CLIENT, spool: spool(spoolOf("production")) }, runtime);
    const staging = createTunnel({ dsn: OTHER_TEST_DSN, route: "/a3f8c1", limiter: EVERY_CLIENT, spool: spool(spoolOf("staging")) }, runtime);

    expect((await post(production, "/k7q2x9", TEST_DSN))?.status).toBe(200);
    expect((await post(staging, "/a3f8c1", OTHER_TEST_DSN))?.status).toBe(200);
    expect(sentry.took.map((took) => new URL(took.url).pathname)).toEqual(["/api/4502/envelope/", "/api/4503/envelope/"]);
    // Neither answers the other's route, nor forwards the other's DSN.
    expect(await post(production, "/a3f8c1", OTHER_TEST_DSN)).toBeUndefined();
    expect((await post(production, "/k7q2x9", OTHER_TEST_DSN))?.status).toBe(403);
    // Each takes its own queues' batches only.
    expect([production.handlesQueue("production-spool"), production.handlesQueue("staging-spool"), staging.handlesQueue("staging-spool-dead")]).toEqual([true, false, true]);

    // Sentry down: each stores in its own queue.
    sentry.answer = () => new Response("down", { status: 503 });
    expect((await post(staging, "/a3f8c1", OTHER_TEST_DSN))?.status).toBe(202);
    expect([stored.production.length, stored.staging.length]).toEqual([0, 1]);
  });

  it("reads the Worker's variables with optionsFromEnv, and lets an option override one", async () => {
    const sentry = new StubSentry();
    const env = { SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: "/k7q2x9", TUNNEL_UPSTREAM_ORIGIN: "http://127.0.0.1:9", TUNNEL_RATE_LIMITER: EVERY_CLIENT };
    const tunnel = createTunnel({ ...optionsFromEnv(env), route: "/a3f8c1" }, { fetch: sentry.fetch, log: () => {} });
    expect(tunnel.describe().pages_post_to).toBe("/a3f8c1");
    expect((await post(tunnel, "/a3f8c1", TEST_DSN))?.status).toBe(200);
    expect(sentry.took.map((took) => took.url)).toEqual(["http://127.0.0.1:9/api/4502/envelope/?hsts=0"]);
  });

  it("reads a compressed envelope only when given compressedBodies: without, refuses it unread, 415", async () => {
    const sentry = new StubSentry();
    const body = new Uint8Array(gzipSync(envelope({ dsn: TEST_DSN }).body));
    const postGzip = (tunnel: TunnelWorker) =>
      answerOf(tunnel, new Request(`${APP}/monitoring?o=4501&p=4502&r=us`, { method: "POST", body, headers: { "content-length": String(body.byteLength), "content-encoding": "gzip" } }));
    const plain = createTunnel({ dsn: TEST_DSN, limiter: EVERY_CLIENT }, { fetch: sentry.fetch, log: () => {} });
    const refused = await postGzip(plain);
    expect([refused.status, ((await refused.json()) as { reason: string }).reason]).toEqual([415, "unsupported_encoding"]);
    expect(plain.describe().compressed_bodies).toMatch(/^off/);
    expect(sentry.took).toEqual([]);

    const reading = createTunnel({ dsn: TEST_DSN, limiter: EVERY_CLIENT, compressedBodies: compressedBodies() }, { fetch: sentry.fetch, log: () => {} });
    expect((await postGzip(reading)).status).toBe(200);
    expect(sentry.took.map((took) => [took.headers.get("content-encoding"), Buffer.from(took.body).equals(body)])).toEqual([["gzip", true]]);
  });

  it("says what it describes from the options, its bindings as bound", () => {
    const tunnel = createTunnel({ dsn: TEST_DSN, limiter: "off", logForwarded: true });
    expect(tunnel.describe()).toMatchObject({
      rate_limiter: expect.stringMatching(/^off/),
      spool: expect.stringMatching(/^off/),
      forwarded_lines: expect.stringMatching(/^on: every envelope Sentry took is logged too/),
    });
  });

  it("names the option, not a Worker variable, when one is wrong or a limit is left out", () => {
    expect(configRefusal(() => createTunnel({ dsn: TEST_DSN, route: "/build/x", hostPaths: ["/build/*"], limiter: EVERY_CLIENT }))).toEqual({
      variable: "route",
      message: 'route would shadow /build/*, which the app serves, got "/build/x"',
    });
    expect(configRefusal(() => createTunnel({ dsn: "not a dsn", limiter: EVERY_CLIENT }))).toMatchObject({ variable: "dsn" });
    expect(configRefusal(() => createTunnel({ dsn: TEST_DSN, timeoutMs: -5, limiter: EVERY_CLIENT }))).toMatchObject({ variable: "timeoutMs" });
    expect(configRefusal(() => createTunnel({ dsn: TEST_DSN, limiter: EVERY_CLIENT, spool: spool({ queue: { send: async () => {} } }) }))).toMatchObject({
      variable: "spool.clientBudget",
      message: expect.stringMatching(/^spool\.clientBudget is required while the tunnel's limiter is on/),
    });
    // Read from the Worker's variables, the same refusals name the variable.
    expect(configRefusal(() => createTunnel(optionsFromEnv({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: "/tunnel-x", TUNNEL_RATE_LIMITER: EVERY_CLIENT, TUNNEL_SENTRY_PATHS: "off" })))).toMatchObject({ variable: "TUNNEL_ROUTE" });
    expect(configRefusal(() => createTunnel({ ...optionsFromEnv({ SENTRY_DSN: TEST_DSN, TUNNEL_RATE_LIMITER: EVERY_CLIENT }), hostPaths: ["/monitoring"] }))).toMatchObject({ variable: "hostPaths" });
  });

  it("refuses a limiter that is not a rate limiter, such as the whole env, naming the option", () => {
    const env = { SENTRY_DSN: TEST_DSN, TUNNEL_RATE_LIMITER: EVERY_CLIENT };
    expect(configRefusal(() => createTunnel({ dsn: TEST_DSN, limiter: env as unknown as typeof EVERY_CLIENT }))).toEqual({
      variable: "limiter",
      message: "limiter is not a Workers Rate Limiting binding (it has no limit() method): pass a [[ratelimits]] binding",
    });
  });

  it("refuses the request, and says so in a line, when the limiter fails at run time", async () => {
    const lines: unknown[] = [];
    const failing = { limit: async (): Promise<RateLimitOutcome> => Promise.reject(new Error("the limiter's service is down")) };
    const tunnel = createTunnel({ dsn: TEST_DSN, limiter: failing }, { fetch: new StubSentry().fetch, log: (line) => void lines.push(line) });
    expect((await post(tunnel, tunnel.describe().pages_post_to!, TEST_DSN))?.status).toBe(429);
    expect(lines).toContainEqual(expect.objectContaining({ event: "tunnel_limiter", status: "failed", error: "the limiter's service is down", failures: 1 }));
    expect(tunnel.describe().rate_limiter).toMatch(/a call that fails refuses its request/);
  });

  it("refuses the request within a bound when the limiter never answers", { timeout: 15_000 }, async () => {
    const lines: unknown[] = [];
    const silent = { limit: (): Promise<RateLimitOutcome> => new Promise(() => {}) };
    const tunnel = createTunnel({ dsn: TEST_DSN, limiter: silent }, { fetch: new StubSentry().fetch, log: (line) => void lines.push(line) });
    expect((await post(tunnel, tunnel.describe().pages_post_to!, TEST_DSN))?.status).toBe(429);
    expect(lines).toContainEqual(expect.objectContaining({ event: "tunnel_limiter", error: "no answer within 3000 ms" }));
  });

  it("refuses a second tunnel whose spool claims the first one's queue, naming the option", () => {
    const given = { queue: { send: async () => {} }, clientBudget: EVERY_CLIENT, totalBudget: EVERY_CLIENT };
    createTunnel({ dsn: TEST_DSN, route: "/q1w2e3", limiter: EVERY_CLIENT, spool: spool({ ...given, queueName: "shared-spool", deadLetterQueueName: "first-dead" }) });
    // The same tunnel built again (a new isolate's first request, say) is no second tunnel.
    createTunnel({ dsn: TEST_DSN, route: "/q1w2e3", limiter: EVERY_CLIENT, spool: spool({ ...given, queueName: "shared-spool", deadLetterQueueName: "first-dead" }) });
    expect(configRefusal(() => createTunnel({ dsn: OTHER_TEST_DSN, route: "/r4t5y6", limiter: EVERY_CLIENT, spool: spool({ ...given, queueName: "shared-spool", deadLetterQueueName: "second-dead" }) }))).toEqual({
      variable: "spool.queueName",
      message: expect.stringMatching(/^spool\.queueName is "shared-spool", which another tunnel in this Worker \(\/q1w2e3/),
    });
  });

  it("names a development upstream in what it describes", () => {
    expect(createTunnel({ dsn: TEST_DSN, limiter: "off", upstreamOrigin: "http://127.0.0.1:8969" }).describe().upstream).toBe(
      "elsewhere: upstreamOrigin sends every envelope to http://127.0.0.1:8969, not to Sentry; it is for development and tests",
    );
  });
});
