import { deflateSync, gunzipSync, gzipSync } from "node:zlib";

import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import type { TunnelAnswerCode } from "../src/testing.ts";
import { createTunnel, type LogLine } from "../src/index.ts";
import { answerOf, tunnelFromEnv } from "./support/test-settings.ts";
import {
  EVERY_CLIENT,
  SENTRY_OK,
  StubSentry,
  TEST_DSN,
  TEST_TUNNEL,
  concat,
  envelope,
  equalBytes,
  headerOf,
  neverAnswers,
  tunnelUnderTest,
  type TunnelUnderTest,
} from "./support/test-harness.ts";

/**
 * The tunnel where it runs, as a client and Sentry see it: in workerd (Cloudflare's vitest
 * integration), built by `createTunnel`, each request a workerd `Request` whose body may
 * trickle, stall, lie about its length or be compressed, and Sentry a stub `fetch` that keeps what
 * it took. Miniflare's Rate Limiting is the limiter where a test is about it. What needs the
 * app's built Worker and real sockets (a client that hangs up, Sentry unreachable, the Worker's
 * own log and memory) stays in the app's `test/worker/`.
 */

const MiB = 1024 * 1024;
const PARTNER = "https://partner.example.com";
const SELF_HOSTED_DSN = "http://fedcba9876543210fedcba9876543210@sentry.example.com/base/77";
const limiter = (env as unknown as { TUNNEL_RATE_LIMITER: RateLimit }).TUNNEL_RATE_LIMITER;
/** The app's route, derived from its DSN, and the path Sentry's SDK posts to with `tunnel: true`. */
const served = tunnelFromEnv({ SENTRY_DSN: TEST_DSN, TUNNEL_RATE_LIMITING: "off" }).describe();
const ROUTE = served.pages_post_to!;
const SENTRY_PATH = served.sentry_sdk_paths_served[0]!;
const text = (value: string) => new TextEncoder().encode(value);

async function reasonOf(response: Response): Promise<string | undefined> {
  const body = await response.text();
  return body.startsWith("{") ? (JSON.parse(body) as { reason?: string }).reason : undefined;
}

/** How a test's client sends its body: in chunks, perhaps stopping for good, with an honest, missing or false length. */
interface Sending {
  chunk: number;
  /** Stop after this many chunks, and never end the body. */
  stallAfter: number | null;
  length: number | undefined;
}

/**
 * The body as a client sends it. A body longer than it declares is cut at that length (as an HTTP
 * client cuts it); one shorter than it declares stalls, waiting for the rest it promised.
 * `complete()` says whether the tunnel can have had the whole body.
 */
function clientBody(body: Uint8Array, { chunk, stallAfter, length }: Sending) {
  const sendable = length === undefined ? body : body.subarray(0, Math.min(length, body.byteLength));
  let offset = 0;
  let sent = 0;
  let ended = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stallAfter !== null && sent === stallAfter) return new Promise<void>(() => {});
      if (offset >= sendable.byteLength) {
        if (length !== undefined && length > sendable.byteLength) return new Promise<void>(() => {});
        ended = true;
        return controller.close();
      }
      controller.enqueue(sendable.slice(offset, offset + chunk));
      offset += chunk;
      sent += 1;
    },
  });
  return { stream, sendable, complete: () => ended };
}

/** POSTs a body that sends `first`, then stalls for good; with `length`, declared as that long. */
async function stalled(tunnel: TunnelUnderTest, first: Uint8Array, length?: number) {
  const { stream } = clientBody(first, { chunk: Math.max(1, first.byteLength), stallAfter: first.byteLength === 0 ? 0 : 1, length });
  const started = Date.now();
  const response = await tunnel.post(stream, length === undefined ? {} : { "content-length": String(length) });
  return { status: response.status, reason: await reasonOf(response), elapsedMs: Date.now() - started };
}

describe("delivery", () => {
  it("delivers a text envelope byte for byte to the DSN's ingest, and passes Sentry's 2xx back with {} for its body", async () => {
    const tunnel = tunnelUnderTest();
    const { body } = envelope();
    const response = await tunnel.post(body, { "content-type": "text/plain;charset=UTF-8" });
    expect(response.status).toBe(200);
    // Sentry's body only echoes the event id the SDK made: not read (decision 026), and not Chromium's "failed" empty answer.
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.text()).toBe("{}");
    const [took] = tunnel.sentry.took;
    expect(took!.url).toBe("https://o4501.ingest.us.sentry.io/api/4502/envelope/?hsts=0");
    expect(took!.headers.get("content-type")).toBe("application/x-sentry-envelope");
    expect(equalBytes(took!.body, body)).toBe(true);
  });

  it.each([
    ["gzip", gzipSync],
    ["deflate", deflateSync],
  ] as const)("forwards a %s body still compressed, with its encoding", async (encoding, compress) => {
    const tunnel = tunnelUnderTest();
    const body = new Uint8Array(compress(envelope({ attachmentBytes: 300_000 }).body));
    expect((await tunnel.post(body, { "content-encoding": encoding })).status).toBe(200);
    expect(tunnel.sentry.took[0]!.headers.get("content-encoding")).toBe(encoding);
    expect(equalBytes(tunnel.sentry.took[0]!.body, body)).toBe(true);
  });

  it("delivers binary items, a body sent without a length, and 15 MiB, each whole", async () => {
    const tunnel = tunnelUnderTest();
    const bodies = [envelope({ attachmentBytes: 200_000 }).body, envelope({ attachmentBytes: 500_000 }).body, envelope({ attachmentBytes: 15 * MiB }).body];
    expect((await tunnel.post(bodies[0]!)).status).toBe(200);
    expect((await tunnel.post(clientBody(bodies[1]!, { chunk: 64 * 1024, stallAfter: null, length: undefined }).stream)).status).toBe(200);
    expect((await tunnel.post(bodies[2]!)).status).toBe(200);
    expect(tunnel.sentry.took.map((took, index) => equalBytes(took.body, bodies[index]!))).toEqual([true, true, true]);
  });

  it("sends a self-hosted DSN's envelope to its own path", async () => {
    const tunnel = tunnelUnderTest({ allowedDsns: [SELF_HOSTED_DSN] });
    expect((await tunnel.post(envelope({ dsn: SELF_HOSTED_DSN }).body, {}, "/monitoring?p=77")).status).toBe(200);
    expect(tunnel.sentry.took[0]!.url).toBe("http://sentry.example.com/base/api/77/envelope/");
  });

  it("lets a listed partner origin, the app's own and a request without Origin through", async () => {
    const tunnel = tunnelUnderTest({ allowedOrigins: [PARTNER] });
    for (const headers of [{ origin: PARTNER }, { origin: "https://app.example" }, {}]) expect((await tunnel.post(envelope().body, headers)).status).toBe(200);
    expect(tunnel.sentry.took).toHaveLength(3);
  });
});

describe("headers", () => {
  it("forwards the client's IP, browser headers and the four client hints Relay reads (device model and OS version among them), never its cookies, credentials or other hints", async () => {
    const tunnel = tunnelUnderTest();
    await tunnel.post(envelope().body, {
      cookie: "session=first-party-secret",
      authorization: "Bearer first-party-secret",
      "cf-connecting-ip": "203.0.113.9",
      "user-agent": "Mozilla/5.0 (tunnel test)",
      referer: "https://app.example/page",
      "sec-ch-ua": '"Chromium";v="156"',
      "sec-ch-ua-mobile": "?1",
      "sec-ch-ua-model": '"Pixel 9"',
      "sec-ch-ua-platform": '"Android"',
      "sec-ch-ua-platform-version": '"15.0.0"',
      "sec-ch-ua-full-version-list": '"Chromium";v="156.0.8078.73"',
      "sec-ch-ua-smuggled": "x",
    });
    const headers = Object.fromEntries(tunnel.sentry.took[0]!.headers);
    expect(headers).toMatchObject({
      "x-forwarded-for": "203.0.113.9",
      "x-sentry-forwarded-for": "203.0.113.9",
      "user-agent": "Mozilla/5.0 (tunnel test)",
      referer: "https://app.example/page",
    });
    expect(Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith("sec-ch-ua")))).toEqual({
      "sec-ch-ua": '"Chromium";v="156"',
      "sec-ch-ua-model": '"Pixel 9"',
      "sec-ch-ua-platform": '"Android"',
      "sec-ch-ua-platform-version": '"15.0.0"',
    });
    expect(JSON.stringify(headers)).not.toContain("first-party-secret");
  });

  it("passes a 429 with its rate-limit headers on, so the SDK backs off", async () => {
    const tunnel = tunnelUnderTest({ spool: false });
    tunnel.sentry.answer = () =>
      new Response('{"detail":"rate limited"}', {
        status: 429,
        headers: { "content-type": "application/json", "retry-after": "60", "x-sentry-rate-limits": "60:transaction:organization" },
      });
    const response = await tunnel.post(envelope().body);
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("60");
    expect(response.headers.get("x-sentry-rate-limits")).toBe("60:transaction:organization");
    expect(await response.text()).toBe('{"detail":"rate limited"}');
  });

  it("passes a 5xx on as it is when no spool is bound", async () => {
    const tunnel = tunnelUnderTest({ spool: false });
    tunnel.sentry.answer = () => new Response("busy", { status: 503, headers: { "content-type": "text/plain" } });
    const response = await tunnel.post(envelope().body);
    expect(response.status).toBe(503);
    expect(response.headers.get("content-type")).toBe("text/plain");
    expect(await response.text()).toBe("busy");
  });

  it("passes a 204 or 205 on with no body, as those statuses must have none", async () => {
    const tunnel = tunnelUnderTest();
    for (const status of [204, 205]) {
      tunnel.sentry.answer = () => new Response(null, { status });
      const response = await tunnel.post(envelope().body);
      expect([response.status, await response.text()]).toEqual([status, ""]);
    }
  });

  it("does not let Sentry set HSTS, cookies or CORS on our domain", async () => {
    const tunnel = tunnelUnderTest();
    tunnel.sentry.answer = () =>
      Response.json(
        {},
        { headers: { "strict-transport-security": "max-age=31536000; includeSubDomains", "set-cookie": "tracker=1; Domain=app.example", "access-control-allow-origin": "*" } },
      );
    const response = await tunnel.post(envelope().body);
    expect(response.status).toBe(200);
    for (const name of ["strict-transport-security", "set-cookie", "access-control-allow-origin"]) expect(response.headers.get(name)).toBeNull();
  });

  it("serves an HTML answer as plain text, never sniffed", async () => {
    const tunnel = tunnelUnderTest({ spool: false });
    tunnel.sentry.answer = () => new Response("<html><script>alert(document.cookie)</script></html>", { status: 403, headers: { "content-type": "text/html; charset=utf-8" } });
    const response = await tunnel.post(envelope().body);
    expect(response.status).toBe(403);
    expect(response.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("reads no more than 64 KiB of a refusal, and keeps its status", async () => {
    const tunnel = tunnelUnderTest();
    let written = 0;
    tunnel.sentry.answer = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            if (written >= 8 * MiB) return controller.close();
            written += 64 * 1024;
            controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
          },
        }),
        { status: 400, headers: { "content-type": "application/json" } },
      );
    const response = await tunnel.post(envelope().body);
    expect(response.status).toBe(400);
    expect(await response.text()).toBe("");
    expect(written).toBeLessThan(8 * MiB);
  });
});

describe("CORS for allowed partner origins only", () => {
  it("answers a partner's preflight, and lets it read Sentry's 429 and Retry-After", async () => {
    const tunnel = tunnelUnderTest({ allowedOrigins: [PARTNER] });
    const preflight = await tunnel.fetch(TEST_TUNNEL, {
      method: "OPTIONS",
      headers: { origin: PARTNER, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(PARTNER);
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");

    tunnel.sentry.answer = () => new Response(null, { status: 429, headers: { "retry-after": "60", "x-sentry-rate-limits": "60:transaction:organization" } });
    const limited = await tunnel.post(envelope().body, { origin: PARTNER });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("access-control-allow-origin")).toBe(PARTNER);
    expect(limited.headers.get("access-control-expose-headers")).toBe("Retry-After, X-Sentry-Rate-Limits");
    expect(limited.headers.get("vary")).toBe("Origin");
  });

  it("gives any other origin no CORS header at all", async () => {
    const tunnel = tunnelUnderTest({ allowedOrigins: [PARTNER] });
    for (const response of [
      await tunnel.fetch(TEST_TUNNEL, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } }),
      await tunnel.post(envelope().body, { origin: "https://evil.example" }),
      await tunnel.post(envelope().body, { origin: "https://app.example" }),
    ]) {
      expect([...response.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
    }
  });
});

describe("refusals, none of which reach Sentry", () => {
  const post = (tunnel: TunnelUnderTest, body: Uint8Array, headers: Record<string, string> = {}, path = TEST_TUNNEL) => tunnel.post(body, headers, path);
  const app = () => envelope().body;
  const cases: [string, (tunnel: TunnelUnderTest) => Promise<Response>, number, TunnelAnswerCode][] = [
    ["GET", (tunnel) => tunnel.fetch(TEST_TUNNEL), 405, "method_not_allowed"],
    ["PUT", (tunnel) => tunnel.fetch(TEST_TUNNEL, { method: "PUT", body: app() }), 405, "method_not_allowed"],
    ["a query without a project", (tunnel) => post(tunnel, app(), {}, "/monitoring?o=4501"), 400, "invalid_query"],
    ["a host smuggled into the org", (tunnel) => post(tunnel, app(), {}, "/monitoring?o=4501.evil.example&p=4502"), 400, "invalid_query"],
    ["an unknown query key", (tunnel) => post(tunnel, app(), {}, `${TEST_TUNNEL}&url=http://evil.example`), 400, "invalid_query"],
    ["a foreign Origin", (tunnel) => post(tunnel, app(), { origin: "https://evil.example" }), 403, "origin_not_allowed"],
    ["a declared length over the maximum", (tunnel) => post(tunnel, app(), { "content-length": String(21 * MiB) }), 413, "envelope_too_large"],
    ["brotli", (tunnel) => post(tunnel, app(), { "content-encoding": "br" }), 415, "unsupported_encoding"],
    ["an empty body", (tunnel) => post(tunnel, new Uint8Array(0)), 400, "empty_envelope"],
    ["no newline within 64 KiB", (tunnel) => post(tunnel, new Uint8Array(70_000).fill(0x61)), 400, "header_too_long"],
    ["a header that is not JSON", (tunnel) => post(tunnel, text("hello\n{}\n")), 400, "header_not_json"],
    ["a header without a DSN", (tunnel) => post(tunnel, text('{"event_id":"1"}\n{}\n')), 400, "dsn_missing"],
    ["a DSN that does not parse", (tunnel) => post(tunnel, text('{"dsn":"not a dsn"}\n{}\n')), 400, "dsn_invalid"],
    ["a body that is not gzip", (tunnel) => post(tunnel, app(), { "content-encoding": "gzip" }), 400, "bad_compression"],
    ["a DSN that is not allowed", (tunnel) => post(tunnel, envelope({ dsn: "https://0123456789abcdef0123456789abcdef@o666.ingest.us.sentry.io/4502" }).body), 403, "dsn_not_allowed"],
    ["a query naming no allowed project", (tunnel) => post(tunnel, app(), {}, "/monitoring?o=4501&p=1&r=us"), 403, "query_not_allowed"],
    ["a query for an allowed project in another region", (tunnel) => post(tunnel, app(), {}, "/monitoring?o=4501&p=4502&r=de"), 403, "query_not_allowed"],
    // The DSN must be exactly an allowed one.
    ["text after the project id", (tunnel) => post(tunnel, envelope({ dsn: `${TEST_DSN}abc` }).body), 400, "dsn_invalid"],
    ["a query after the project id", (tunnel) => post(tunnel, envelope({ dsn: `${TEST_DSN}?x=1` }).body), 400, "dsn_invalid"],
    ["a fragment after the project id", (tunnel) => post(tunnel, envelope({ dsn: `${TEST_DSN}#x` }).body), 400, "dsn_invalid"],
    ["a port", (tunnel) => post(tunnel, envelope({ dsn: TEST_DSN.replace("sentry.io/", "sentry.io:443/") }).body), 403, "dsn_not_allowed"],
    [
      "a legacy secret and a port",
      (tunnel) => post(tunnel, envelope({ dsn: TEST_DSN.replace("@", ":secret@").replace("sentry.io/", "sentry.io:443/") }).body),
      403,
      "dsn_not_allowed",
    ],
    // A host is compared without regard to case (allow-list's unit test); a key is not.
    ["a legacy secret and another case of the key", (tunnel) => post(tunnel, envelope({ dsn: TEST_DSN.replace("abcdef@", "ABCDEF:secret@") }).body), 403, "dsn_not_allowed"],
    [
      "two dsn keys",
      (tunnel) => post(tunnel, text(`{"dsn":"https://0123456789abcdef0123456789abcdef@evil.example/4502","dsn":"${TEST_DSN}"}\n{"type":"event"}\n{}\n`)),
      400,
      "header_repeated_key",
    ],
  ];

  it.each(cases)("%s is refused with its reason", async (_name, send, status, reason) => {
    const tunnel = tunnelUnderTest({ allowedOrigins: [PARTNER] });
    const response = await send(tunnel);
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    // The reason code is the contract; the sentence explains it, in one line of its own words
    // (what a sentence claims is tested where it names something the request said).
    expect(await response.json()).toEqual({ reason, error: expect.stringMatching(/^[A-Z][^\n]{10,300}[.:]$/) });
    if (status === 405) expect(response.headers.get("allow")).toBe("POST, OPTIONS");
    expect(tunnel.lines).toMatchObject([{ event: "tunnel", outcome: "rejected", reason, status }]);
    expect(tunnel.sentry.arrivals).toBe(0);
  });

  it("says in its sentence the path it serves nothing at, and that a route other than the original takes no query", async () => {
    const tunnel = tunnelUnderTest();
    const notFound = await post(tunnel, app(), {}, "/Monitoring/x%3Cb%3E?o=4501");
    expect(await notFound.json()).toEqual({ reason: "not_found", error: "The tunnel serves nothing at /Monitoring/x%3Cb%3E: its routes are answered only as the pages are told to spell them." });
    const long = await post(tunnel, app(), {}, `/${"a".repeat(500)}/`);
    expect(((await long.json()) as { error: string }).error).toBe(`The tunnel serves nothing at /${"a".repeat(119)}…: its routes are answered only as the pages are told to spell them.`);
    for (const path of [`${ROUTE}?o=4501&p=4502`, `${SENTRY_PATH}?p=4502`]) {
      expect(await (await post(tunnel, app(), {}, path)).json(), path).toEqual({ reason: "invalid_query", error: "This route takes no query: the envelope's DSN names its project." });
    }
  });

  it.each([
    ["the default maximum, past what the spool holds in hand", undefined, 21 * MiB],
    ["a maximum below what the spool holds in hand", 1 * MiB, 2 * MiB],
  ])("stops a body of unknown length at %s, and nothing reaches Sentry whole", async (_name, maxEnvelopeBytes, bytes) => {
    const tunnel = tunnelUnderTest({ maxEnvelopeBytes });
    const body = envelope({ attachmentBytes: bytes }).body;
    const response = await tunnel.post(clientBody(body, { chunk: 256 * 1024, stallAfter: null, length: undefined }).stream);
    expect(response.status).toBe(413);
    expect(await reasonOf(response)).toBe("envelope_too_large");
    expect(tunnel.sentry.took).toEqual([]);
  });
});

describe("Sentry failing", () => {
  it("does not follow a redirect, and answers 502", async () => {
    const tunnel = tunnelUnderTest({ spool: false });
    tunnel.sentry.answer = () => new Response(null, { status: 307, headers: { location: "https://o4501.ingest.us.sentry.io/followed" } });
    const response = await tunnel.post(envelope().body);
    expect(response.status).toBe(502);
    expect(await reasonOf(response)).toBe("upstream_redirect");
    expect(tunnel.sentry.took.map((took) => new URL(took.url).pathname)).toEqual(["/api/4502/envelope/"]);
  });

  it("answers 504 when Sentry does not answer in time", async () => {
    const tunnel = tunnelUnderTest({ timeoutMs: 500, spool: false });
    tunnel.sentry.answer = neverAnswers;
    const response = await tunnel.post(envelope().body);
    expect(response.status).toBe(504);
    expect(await reasonOf(response)).toBe("upstream_timeout");
  });

  it.each([
    ["took it", 200, "forwarded", 200],
    ["failed", 503, "spooled", 202],
  ] as const)(
    "answers by the deadline when Sentry's answer stalls mid-body, and its status decides: Sentry %s",
    async (_name, status, outcome, answered) => {
      const tunnel = tunnelUnderTest({ timeoutMs: 500, logForwarded: true });
      tunnel.sentry.answer = () =>
        new Response(
          new ReadableStream<Uint8Array>({
            start: (controller) => controller.enqueue(text('{"id":')),
            pull: () => new Promise<void>(() => {}),
          }),
          { status, headers: { "content-type": "application/json", "content-length": "100" } },
        );
      const started = Date.now();
      const response = await tunnel.post(envelope().body);
      await response.arrayBuffer();
      expect(Date.now() - started).toBeLessThan(500 + 2_000);
      expect(tunnel.lines).toMatchObject([{ outcome, upstream_status: status }]);
      // A copy of an envelope Sentry took would be sent again: a duplicate in Sentry.
      expect(tunnel.stored).toHaveLength(outcome === "spooled" ? 1 : 0);
      expect(response.status).toBe(answered);
    },
  );
});

describe("one deadline, every phase", () => {
  const TIMEOUT_MS = 500;
  const head = envelope().body;
  it.each([
    ["chunked, before the first byte", new Uint8Array(0), undefined],
    ["chunked, inside the header line", head.subarray(0, 20), undefined],
    ["chunked, after forwarding began", concat(head, new Uint8Array(200_000).fill(0x61)), undefined],
    ["with a length, inside the header line", head.subarray(0, 20), 2 * MiB],
    ["with a length, after forwarding began", concat(head, new Uint8Array(200_000).fill(0x61)), 2 * MiB],
    ["small, with a length", head.subarray(0, 30), 2_000],
  ])("answers a body that stalls %s with 408 when the deadline runs out, and delivers nothing", async (_name, first, length) => {
    const tunnel = tunnelUnderTest({ timeoutMs: TIMEOUT_MS });
    const answer = await stalled(tunnel, first, length);
    expect(answer).toMatchObject({ status: 408, reason: "body_timeout" });
    // Not before it: a slow client is not cut short.
    expect(answer.elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(tunnel.sentry.took).toEqual([]);
    expect(tunnel.stored).toEqual([]);
  });
});

describe("a property: whatever arrives, however it arrives, the tunnel answers, and forwards only what it accepts", () => {
  const timeoutMs = 500;
  /** What the runtime may add to the deadline before the client has its answer: generous, for a loaded machine. */
  const slackMs = 2_000;
  const valid = envelope().body;
  const bombs = [new Uint8Array(gzipSync(new Uint8Array(60 * MiB).fill(0x20), { level: 9 })), new Uint8Array(deflateSync(new Uint8Array(100 * MiB), { level: 9 }))];
  const plain = fc.oneof(
    fc.constant(valid),
    fc.uint8Array({ maxLength: 3_000 }),
    fc.nat(valid.byteLength).map((end) => valid.slice(0, end)),
    fc.integer({ min: 1, max: 400_000 }).map((size) => concat(valid, new Uint8Array(size).fill(0x61))),
    fc.jsonValue().map((header) => text(`${JSON.stringify(header)}\n{}\n`)),
  );
  const encoded = fc.oneof(
    fc.tuple(plain, fc.constantFrom("identity", "gzip", "deflate", "lie-gzip")).map(([body, encoding]) => {
      if (encoding === "gzip") return { body: new Uint8Array(gzipSync(body)), encoding };
      if (encoding === "deflate") return { body: new Uint8Array(deflateSync(body)), encoding };
      // Says gzip, is not.
      if (encoding === "lie-gzip") return { body, encoding: "gzip" };
      return { body, encoding };
    }),
    fc.constantFrom(...bombs).map((body) => ({ body, encoding: body === bombs[0] ? "gzip" : "deflate" })),
  );
  const sending = fc.record({
    chunk: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1_000, max: 100_000 })),
    stallAfter: fc.oneof({ arbitrary: fc.constant(null), weight: 5 }, { arbitrary: fc.nat(5), weight: 1 }),
    declared: fc.oneof(
      { arbitrary: fc.constant("honest" as const), weight: 5 },
      { arbitrary: fc.constant("none" as const), weight: 3 },
      { arbitrary: fc.constantFrom("short" as const, "long" as const), weight: 1 },
    ),
  });

  it("never answers 5xx, answers by the deadline, and delivers exactly what it accepted, once", { timeout: 120_000 }, async () => {
    const tunnel = tunnelUnderTest({ timeoutMs, spool: false });
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(encoded, sending, async ({ body, encoding }, { chunk: asked, stallAfter, declared }) => {
        runs += 1;
        const tookBefore = tunnel.sentry.took.length;
        const length = { honest: body.byteLength, none: undefined, short: Math.max(0, body.byteLength - 7), long: body.byteLength + 7 }[declared];
        // At most 2,000 chunks, so that a tiny chunk size on a large body stays quick.
        const chunk = Math.max(asked, Math.ceil(body.byteLength / 2_000));
        const client = clientBody(body, { chunk, stallAfter, length });
        const started = Date.now();
        const response = await tunnel.post(client.stream, { "content-encoding": encoding, ...(length === undefined ? {} : { "content-length": String(length) }) });
        await response.arrayBuffer();
        expect(Date.now() - started).toBeLessThan(timeoutMs + slackMs);
        expect(response.status).toBeLessThan(500);
        if (response.status === 200) {
          // Accepted only once the client ended its body: exactly what it sent arrives.
          expect(client.complete()).toBe(true);
          expect(tunnel.sentry.took.length).toBe(tookBefore + 1);
          expect(equalBytes(tunnel.sentry.took.at(-1)!.body, client.sendable)).toBe(true);
        } else {
          // A refused envelope is never delivered whole.
          expect(tunnel.sentry.took.length).toBe(tookBefore);
        }
      }),
      { numRuns: 80 },
    );
    console.log(`property: ${runs} runs`);
  });
});

describe("fuzzing the tunnel", () => {
  const valid = envelope().body;
  const headerLine = valid.slice(0, valid.indexOf(0x0a) + 1);
  const bodies = fc.oneof(
    fc.uint8Array({ maxLength: 2_000 }),
    fc.nat(valid.byteLength).map((end) => valid.slice(0, end)),
    fc.tuple(fc.nat(valid.byteLength - 1), fc.integer({ min: 0, max: 255 })).map(([at, byte]) => {
      const mutated = valid.slice();
      mutated[at] = byte;
      return mutated;
    }),
    fc.jsonValue().map((header) => text(`${JSON.stringify(header)}\n{}\n`)),
    // The allowed header line, then anything: accepted, since only the header line is read.
    { arbitrary: fc.uint8Array({ maxLength: 2_000 }).map((rest) => concat(headerLine, rest)), weight: 3 },
  );
  const queries = fc.oneof(
    { arbitrary: fc.constant(TEST_TUNNEL.slice("/monitoring".length)), weight: 3 },
    fc.dictionary(fc.constantFrom("o", "p", "r", "x", "url", "o[]"), fc.string({ maxLength: 40 })).map((pairs) => `?${new URLSearchParams(pairs)}`),
    fc.string({ maxLength: 3_000 }).map((value) => `?${encodeURIComponent(value)}`),
    fc.constant(`?o=4501&p=${"9".repeat(4_000)}`),
  );
  const headers = fc.record(
    {
      "content-encoding": fc.constantFrom("gzip", "deflate", "br", "identity", "gzip, gzip", "x-gzip", "", "GZIP"),
      origin: fc.constantFrom("https://evil.example", "null", "http://localhost:8787", "https://app.example"),
      "content-type": fc.constantFrom("text/plain;charset=UTF-8", "application/json", "multipart/form-data; boundary=x"),
    },
    { requiredKeys: [] },
  );

  it("answers bad input with a 4xx and its reason, never a 5xx, never calls Sentry for it; delivers what it accepts as sent", { timeout: 60_000 }, async () => {
    const tunnel = tunnelUnderTest();
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(bodies, queries, headers, fc.constantFrom("POST", "POST", "PUT", "GET"), async (body, query, sent, method) => {
        const before = tunnel.sentry.arrivals;
        const response = await tunnel.fetch(`/monitoring${query}`, { method, headers: sent, ...(method === "GET" ? {} : { body }) });
        const answer = await response.text();
        expect(response.status).toBeLessThan(500);
        if (response.status >= 400) {
          expect(JSON.parse(answer)).toMatchObject({ reason: expect.any(String), error: expect.any(String) });
          expect(tunnel.sentry.arrivals).toBe(before);
        } else {
          // Only a well-formed envelope for an allowed DSN gets this far, and it arrives whole, as sent.
          accepted += 1;
          expect(equalBytes(tunnel.sentry.took.at(-1)!.body, body)).toBe(true);
        }
      }),
      {
        numRuns: 400,
        // Accepted requests, so that "as sent" is checked every run: the allowed header line, then anything.
        examples: Array.from({ length: 12 }, (_, index): [Uint8Array, string, Record<string, never> | { origin: "https://app.example"; "content-encoding": "identity" }, "POST"] => [
          concat(headerLine, new Uint8Array(index * 97).fill(index)),
          TEST_TUNNEL.slice("/monitoring".length),
          index % 2 === 0 ? {} : { origin: "https://app.example", "content-encoding": "identity" },
          "POST",
        ]),
      },
    );
    expect(accepted).toBeGreaterThanOrEqual(12);
    expect(tunnel.lines.filter((line) => line.event === "tunnel" && line.reason === "internal_error")).toEqual([]);
  });
});

describe("load and limits", () => {
  /** Sends every job with at most `concurrency` in flight. */
  async function sendAll<T>(jobs: (() => Promise<T>)[], concurrency: number): Promise<T[]> {
    const results: T[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < jobs.length) results.push(await jobs[next++]!());
      }),
    );
    return results;
  }

  /** Every 2xx has exactly one byte-identical delivery; nothing else was delivered at all. */
  function ledger(sent: readonly { id: string; bytes: Uint8Array; status: number }[], tunnel: TunnelUnderTest) {
    const delivered = new Map<string, Uint8Array[]>();
    for (const took of tunnel.sentry.took) {
      const plain = took.headers.get("content-encoding") === "gzip" ? new Uint8Array(gunzipSync(took.body)) : took.body;
      const id = headerOf(plain).event_id as string;
      delivered.set(id, [...(delivered.get(id) ?? []), took.body]);
    }
    const accepted = sent.filter((item) => item.status >= 200 && item.status < 300);
    return {
      accepted: accepted.length,
      refused: sent.length - accepted.length,
      lost: accepted.filter((item) => delivered.get(item.id)?.length !== 1 || !equalBytes(delivered.get(item.id)![0]!, item.bytes)).length,
      duplicated: [...delivered.values()].filter((copies) => copies.length > 1).length,
      deliveredWithoutAcceptance: sent.filter((item) => !(item.status >= 200 && item.status < 300) && delivered.has(item.id)).length,
      unknown: [...delivered.keys()].filter((id) => !sent.some((item) => item.id === id)).length,
    };
  }

  it("loses and duplicates nothing: 600 envelopes, 32 at a time, from 120 clients", { timeout: 60_000 }, async () => {
    const tunnel = tunnelUnderTest({ limiter });
    const sent = await sendAll(
      Array.from({ length: 600 }, (_, index) => async () => {
        const { id, body } = envelope({ attachmentBytes: [200, 9_000, 70_000][index % 3]! });
        const compressed = index % 5 === 0;
        const bytes = compressed ? new Uint8Array(gzipSync(body)) : body;
        const response = await tunnel.post(bytes, { "cf-connecting-ip": `198.51.100.${index % 120}`, ...(compressed ? { "content-encoding": "gzip" } : {}) });
        await response.arrayBuffer();
        return { id, bytes, status: response.status };
      }),
      32,
    );
    const figures = ledger(sent, tunnel);
    console.log(`load: ${JSON.stringify(figures)}`);
    expect(figures).toEqual({ accepted: 600, refused: 0, lost: 0, duplicated: 0, deliveredWithoutAcceptance: 0, unknown: 0 });
  });

  it("limits one client to its share: 429 with Sentry's headers, and a limited envelope is never forwarded", async () => {
    // Miniflare's Rate Limiting, 60 requests per 10 s per client (`vitest.config.ts`, as the README's `wrangler.toml`).
    const tunnel = tunnelUnderTest({ limiter });
    const sent = await sendAll(
      Array.from({ length: 150 }, () => async () => {
        const { id, body } = envelope({ attachmentBytes: 500 });
        const response = await tunnel.post(body, { "cf-connecting-ip": "203.0.113.77" });
        if (response.status === 429) {
          expect(response.headers.get("retry-after")).toBe("10");
          expect(response.headers.get("x-sentry-rate-limits")).toBe("10::key");
        }
        await response.arrayBuffer();
        return { id, bytes: body, status: response.status };
      }),
      24,
    );
    const figures = ledger(sent, tunnel);
    // 150 envelopes in well under 10 s touch at most two of the limiter's windows of 60.
    expect(figures.accepted).toBeGreaterThanOrEqual(60);
    expect(figures.accepted).toBeLessThanOrEqual(120);
    expect(sent.filter((item) => item.status === 429)).toHaveLength(150 - figures.accepted);
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, deliveredWithoutAcceptance: 0, unknown: 0 });
    expect((await tunnel.post(envelope().body, { "cf-connecting-ip": "203.0.113.78" })).status).toBe(200);
  });

  it("spends nothing of a client's share on what another site's page can make its browser send (decision 028)", async () => {
    const tunnel = tunnelUnderTest({ limiter });
    const client = { "cf-connecting-ip": "203.0.113.99" };
    // Well past the share of 60: GETs (an <img>), another origin's POSTs (a no-cors fetch, a form,
    // a beacon), a page's preflight, and spellings no page is given, at every path the tunnel has.
    const paths = [TEST_TUNNEL, "/monitoring/security-report", ROUTE, `${ROUTE}/csp`, SENTRY_PATH, `${SENTRY_PATH}/`, "/MONITORING?o=4501&p=4502&r=us", `/${ROUTE}`];
    const strangers: RequestInit[] = [
      { headers: { ...client, "sec-fetch-site": "cross-site", "sec-fetch-dest": "image" } },
      { method: "POST", body: envelope().body, headers: { ...client, origin: "https://evil.example", "content-type": "text/plain" } },
      { method: "OPTIONS", headers: { ...client, origin: "https://evil.example", "access-control-request-method": "POST" } },
    ];
    const statuses = new Set<number>();
    for (let round = 0; round < 10; round += 1) {
      for (const path of paths) {
        for (const init of strangers) {
          const response = await tunnel.fetch(path, init);
          statuses.add(response.status);
          await response.arrayBuffer();
        }
      }
    }
    expect([...statuses].sort()).toEqual([403, 404, 405]);
    expect(tunnel.sentry.took).toHaveLength(0);
    // The visitor's own envelope and CSP report still go through, on every route.
    for (const path of [TEST_TUNNEL, ROUTE, SENTRY_PATH]) expect((await tunnel.post(envelope().body, client, path)).status, path).toBe(200);
    const report = await tunnel.fetch(`${ROUTE}/csp`, {
      method: "POST",
      headers: { ...client, "content-type": "application/csp-report" },
      body: JSON.stringify({ "csp-report": { "document-uri": "https://app.example/", "blocked-uri": "https://evil.example/x.js" } }),
    });
    expect(report.status).toBeLessThan(300);
  });

  it("holds one client to its share whatever its own pages post: refusals of its POSTs count too", async () => {
    const tunnel = tunnelUnderTest({ limiter });
    // Nothing but envelopes the tunnel refuses (their query names no project): they alone bring the client to its limit.
    const statuses: number[] = [];
    while (statuses.length < 200 && statuses.at(-1) !== 429) {
      const response = await tunnel.post(envelope().body, { "cf-connecting-ip": "203.0.113.98" }, "/monitoring?o=4501&p=9&r=us");
      statuses.push(response.status);
      await response.arrayBuffer();
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.length).toBeGreaterThan(60);
    expect(new Set(statuses.slice(0, 60))).toEqual(new Set([403]));
  });

  it("counts the envelopes Sentry took in a line per project, status and window when no dataset counts them: 500 in one window are a few lines, a loss among them its own", async () => {
    let now = Date.UTC(2026, 11, 7, 12, 0, 0);
    const run = (analytics: { writeDataPoint: () => void } | undefined) => {
      const sentry = new StubSentry();
      const lines: LogLine[] = [];
      const tunnel = createTunnel({ dsn: TEST_DSN, limiter: EVERY_CLIENT, analytics }, { fetch: sentry.fetch, log: (line) => void lines.push(line), now: () => now });
      const post = async () => {
        const { body } = envelope();
        const request = new Request(`https://app.example${tunnel.pageUrl()}`, { method: "POST", body, headers: { "content-length": String(body.byteLength) } });
        return (await tunnel.handle(request))!.status;
      };
      return { sentry, lines, tunnel, post };
    };
    const counted = run(undefined);
    for (let sent = 0; sent < 500; sent += 1) {
      now += 10;
      // One in the middle meets Sentry failing: a loss, with no spool to keep it.
      if (sent === 250) counted.sentry.answer = () => new Response("busy", { status: 503 });
      expect(await counted.post()).toBe(sent === 250 ? 503 : 200);
      counted.sentry.answer = () => Response.json(SENTRY_OK);
    }
    // A later window's request brings out what is still held.
    now += 20_000;
    await counted.tunnel.handle(new Request(`https://app.example${counted.tunnel.pageUrl()}`));
    const tunnelLines = counted.lines.filter((line): line is Extract<LogLine, { event: "tunnel" }> => line.event === "tunnel");
    const took = tunnelLines.filter((line) => line.outcome === "forwarded" && line.upstream_status === 200);
    expect(took.length).toBeLessThanOrEqual(4);
    expect(took.reduce((sum, line) => sum + 1 + (line.repeats ?? 0), 0)).toBe(499);
    expect(tunnelLines.filter((line) => line.upstream_status === 503)).toEqual([expect.objectContaining({ outcome: "forwarded", status: 503 })]);

    const points: unknown[] = [];
    const withDataset = run({ writeDataPoint: () => void points.push(1) });
    for (let sent = 0; sent < 500; sent += 1) expect(await withDataset.post()).toBe(200);
    expect(points).toHaveLength(500);
    expect(withDataset.lines.filter((line) => line.event === "tunnel")).toEqual([]);
  });

  it("writes a bounded number of lines for a client's refusals, however many: one per reason and window, each carrying the count", async () => {
    let now = 1_800_000_000_000;
    const lines: LogLine[] = [];
    const tunnel = tunnelFromEnv({ SENTRY_DSN: TEST_DSN, TUNNEL_RATE_LIMITER: limiter }, { now: () => now, log: (line) => void lines.push(line) });
    const refused = (path: string, init: RequestInit) => answerOf(tunnel, new Request(`https://app.example${path}`, init)).then((response) => response.arrayBuffer());
    const client = { "cf-connecting-ip": "203.0.113.97" };
    // 300 refusals of two reasons (a path not served, a GET to a route), spread over three windows of the limiter's 10 s.
    for (let request = 0; request < 300; request += 1) {
      now += 100;
      await refused(["/Monitoring", TEST_TUNNEL, ROUTE][request % 3]!, request % 3 === 0 ? { method: "POST", headers: client } : { headers: client });
    }
    const windows = 300 * 100 / 10_000 + 1;
    const refusals = () => lines.filter((line): line is Extract<LogLine, { event: "tunnel" }> => line.event === "tunnel" && line.outcome === "rejected");
    expect(refusals().length).toBeLessThanOrEqual(2 * windows);
    // Another client's refusal, two windows on, brings out what is still held: every refusal is counted once.
    now += 20_000;
    await refused("/Monitoring", { method: "POST", headers: { "cf-connecting-ip": "198.51.100.1" } });
    const counted = (reason: string) => refusals().filter((line) => line.reason === reason).reduce((sum, line) => sum + 1 + (line.repeats ?? 0), 0);
    expect({ not_found: counted("not_found"), method_not_allowed: counted("method_not_allowed") }).toEqual({ not_found: 101, method_not_allowed: 200 });
  });
});
