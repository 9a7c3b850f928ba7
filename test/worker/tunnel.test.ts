import { request as httpRequest } from "node:http";
import { deflateSync, gzipSync } from "node:zlib";

import { beforeEach, describe, expect, it } from "vitest";

import { TUNNEL_ANSWERS, type TunnelAnswerCode } from "@edge-monitoring/tunnel/testing";
import { buildEnvelope } from "../support/envelopes";
import { eventually } from "../support/eventually";
import { FakeIngest } from "../support/fake-ingest";
import { freePort, stalledUpload } from "../support/http";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_DSN, APP_TUNNEL, startWorker, type RunningWorker } from "../support/worker";

const SELF_HOSTED_DSN = "http://fedcba9876543210fedcba9876543210@sentry.example.com/base/77";
const MiB = 1024 * 1024;
/**
 * These tests send one client's envelopes far faster than the real limit allows; the limiter has
 * its own tests. And they test the live path: Sentry's failures reach the client, as they do
 * without the spool (test/worker/spool.test.ts has it).
 */
const UNLIMITED = { rateLimit: { limit: 1_000_000, period: 10 }, spool: false };

const envelope = (items?: Buffer | string, dsn?: string) => buildEnvelope({ items, dsn }).body;
const attachmentEnvelope = (size: number) => buildEnvelope({ attachmentBytes: size }).body;

describe("the tunnel in workerd", () => {
  const at = (query: string) => `/monitoring?${query}`;

  const { ingest, worker } = useIngestAndWorker(
    { TUNNEL_ALLOWED_DSNS: SELF_HOSTED_DSN, TUNNEL_ALLOWED_ORIGINS: "https://partner.example.com", TUNNEL_TIMEOUT_MS: "2000" },
    UNLIMITED,
  );
  beforeEach(() => ingest.reset());

  describe("delivery", () => {
    it("delivers a text envelope byte for byte to the DSN's ingest, and passes Sentry's answer back", async () => {
      const body = envelope();
      const response = await worker.post(body, { "content-type": "text/plain;charset=UTF-8" });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/json");
      expect(await response.json()).toEqual({ id: "0123456789abcdef0123456789abcdef" });
      expect(ingest.deliveries).toHaveLength(1);
      const [delivery] = ingest.deliveries;
      expect(delivery!.url).toBe("/api/4502/envelope/?hsts=0");
      expect(delivery!.headers["content-type"]).toBe("application/x-sentry-envelope");
      expect(delivery!.headers["content-length"]).toBe(String(body.length));
      expect(delivery!.body.equals(body)).toBe(true);
    });

    it("delivers binary items unchanged", async () => {
      const body = attachmentEnvelope(200_000);
      expect((await worker.post(body)).status).toBe(200);
      expect(ingest.deliveries[0]!.body.equals(body)).toBe(true);
    });

    it.each([
      ["gzip", gzipSync],
      ["deflate", deflateSync],
    ] as const)("forwards a %s body still compressed, with its encoding", async (encoding, compress) => {
      const body = compress(attachmentEnvelope(300_000));
      const response = await worker.post(body, { "content-encoding": encoding });
      expect(response.status).toBe(200);
      const [delivery] = ingest.deliveries;
      expect(delivery!.headers["content-encoding"]).toBe(encoding);
      expect(delivery!.body.equals(body)).toBe(true);
    });

    it("delivers a body sent without a length", async () => {
      const body = attachmentEnvelope(500_000);
      const response = await worker.post(streamOf(body, 64 * 1024));
      expect(response.status).toBe(200);
      expect(ingest.deliveries[0]!.body.equals(body)).toBe(true);
    });

    it("sends a self-hosted DSN's envelope to its own path", async () => {
      const body = envelope(undefined, SELF_HOSTED_DSN);
      expect((await worker.post(body, {}, at("p=77"))).status).toBe(200);
      expect(ingest.deliveries[0]!.url).toBe("/base/api/77/envelope/");
    });

    it("streams a 15 MiB envelope through whole", async () => {
      const body = attachmentEnvelope(15 * MiB);
      const response = await worker.post(body);
      expect(response.status).toBe(200);
      expect(ingest.deliveries).toHaveLength(1);
      expect(ingest.deliveries[0]!.body.equals(body)).toBe(true);
    });

    it("lets a listed partner origin and a request without Origin through", async () => {
      expect((await worker.post(envelope(), { origin: "https://partner.example.com" })).status).toBe(200);
      expect((await worker.post(envelope(), { origin: worker.origin })).status).toBe(200);
      expect((await worker.post(envelope())).status).toBe(200);
      expect(ingest.deliveries).toHaveLength(3);
    });
  });

  describe("headers", () => {
    it("forwards the client's IP and browser headers, never its cookies or credentials", async () => {
      await worker.post(envelope(), {
        cookie: "session=first-party-secret",
        authorization: "Bearer first-party-secret",
        "cf-connecting-ip": "203.0.113.9",
        "user-agent": "Mozilla/5.0 (tunnel test)",
        referer: `${worker.origin}/page`,
        "sec-ch-ua-mobile": "?0",
      });
      const { headers } = ingest.deliveries[0]!;
      expect(headers["x-forwarded-for"]).toBe("203.0.113.9");
      expect(headers["x-sentry-forwarded-for"]).toBe("203.0.113.9");
      expect(headers["user-agent"]).toBe("Mozilla/5.0 (tunnel test)");
      expect(headers.referer).toBe(`${worker.origin}/page`);
      expect(headers["sec-ch-ua-mobile"]).toBe("?0");
      expect(JSON.stringify(headers)).not.toContain("first-party-secret");
    });

    it("passes a 429 with its rate-limit headers on, so the SDK backs off", async () => {
      ingest.respondWith((_request, response) => {
        response.writeHead(429, {
          "content-type": "application/json",
          "retry-after": "60",
          // A category these tests send none of: the tunnel remembers the limit (spool.test.ts).
          "x-sentry-rate-limits": "60:transaction:organization",
        });
        response.end('{"detail":"rate limited"}');
      });
      const response = await worker.post(envelope());
      expect(response.status).toBe(429);
      expect(response.headers.get("retry-after")).toBe("60");
      expect(response.headers.get("x-sentry-rate-limits")).toBe("60:transaction:organization");
      expect(await response.text()).toBe('{"detail":"rate limited"}');
    });

    it("passes a 5xx on as it is", async () => {
      ingest.respondWith((_request, response) => {
        response.writeHead(503, { "content-type": "text/plain" });
        response.end("busy");
      });
      const response = await worker.post(envelope());
      expect(response.status).toBe(503);
      expect(response.headers.get("content-type")).toBe("text/plain");
      expect(await response.text()).toBe("busy");
    });

    it("does not let Sentry set HSTS or cookies on our domain", async () => {
      ingest.respondWith((_request, response) => {
        response.writeHead(200, {
          "content-type": "application/json",
          "strict-transport-security": "max-age=31536000; includeSubDomains",
          "set-cookie": "tracker=1; Domain=localhost",
          "access-control-allow-origin": "*",
        });
        response.end("{}");
      });
      const response = await worker.post(envelope());
      expect(response.status).toBe(200);
      expect(response.headers.get("strict-transport-security")).toBeNull();
      expect(response.headers.get("set-cookie")).toBeNull();
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
    });
  });

  describe("rejections, none of which reach Sentry", () => {
    const cases: [string, () => Promise<Response>, number, string][] = [
      ["GET", () => worker.fetch(APP_TUNNEL), 405, "method_not_allowed"],
      ["PUT", () => worker.fetch(APP_TUNNEL, { method: "PUT", body: new Uint8Array(envelope()) }), 405, "method_not_allowed"],
      ["a query without a project", () => worker.post(envelope(), {}, at("o=4501")), 400, "invalid_query"],
      ["a host smuggled into the org", () => worker.post(envelope(), {}, at("o=4501.evil.example&p=4502")), 400, "invalid_query"],
      ["an unknown query key", () => worker.post(envelope(), {}, `${APP_TUNNEL}&url=http://evil.example`), 400, "invalid_query"],
      ["a foreign Origin", () => worker.post(envelope(), { origin: "https://evil.example" }), 403, "origin_not_allowed"],
      ["a declared length over the maximum", () => startUpload(worker, APP_TUNNEL, 21 * MiB), 413, "envelope_too_large"],
      ["brotli", () => worker.post(envelope(), { "content-encoding": "br" }), 415, "unsupported_encoding"],
      ["an empty body", () => worker.post(Buffer.alloc(0)), 400, "empty_envelope"],
      ["no newline within 64 KiB", () => worker.post(Buffer.alloc(70_000, 0x61)), 400, "header_too_long"],
      ["a header that is not JSON", () => worker.post(Buffer.from("hello\n{}\n")), 400, "header_not_json"],
      ["a header without a DSN", () => worker.post(Buffer.from('{"event_id":"1"}\n{}\n')), 400, "dsn_missing"],
      ["a DSN that does not parse", () => worker.post(Buffer.from('{"dsn":"not a dsn"}\n{}\n')), 400, "dsn_invalid"],
      ["a body that is not gzip", () => worker.post(envelope(), { "content-encoding": "gzip" }), 400, "bad_compression"],
      [
        "a DSN that is not allowed",
        () => worker.post(envelope(undefined, "https://0123456789abcdef0123456789abcdef@o666.ingest.us.sentry.io/4502")),
        403,
        "dsn_not_allowed",
      ],
      ["a query naming no allowed project", () => worker.post(envelope(), {}, at("o=4501&p=1&r=us")), 403, "query_not_allowed"],
      ["a query for an allowed project in another region", () => worker.post(envelope(), {}, at("o=4501&p=4502&r=de")), 403, "query_not_allowed"],
    ];

    it.each(cases)("%s is refused", async (_name, send, status, reason) => {
      const response = await send();
      expect(response.status).toBe(status);
      expect(response.headers.get("content-type")).toBe("application/json");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      const body = (await response.json()) as { error: string; reason: string };
      expect(body).toEqual({ reason, error: TUNNEL_ANSWERS[reason as TunnelAnswerCode][2] });
      if (status === 405) expect(response.headers.get("allow")).toBe("POST, OPTIONS");
      expect(ingest.arrivals).toBe(0);
    });

    it("stops a body of unknown length at the maximum, and nothing reaches Sentry whole", async () => {
      const response = await worker.post(streamOf(attachmentEnvelope(21 * MiB), 256 * 1024));
      expect(response.status).toBe(413);
      expect(((await response.json()) as { reason: string }).reason).toBe("envelope_too_large");
      await eventually(() => ingest.arrivals === 1 && ingest.unfinished === 1);
      expect(ingest.deliveries).toHaveLength(0);
    });
  });

  describe("upstream failures", () => {
    it("does not follow a redirect from upstream, and answers 502", async () => {
      ingest.respondWith((_request, response) => {
        response.writeHead(307, { location: `${ingest.origin}/followed` });
        response.end();
      });
      const response = await worker.post(envelope());
      expect(response.status).toBe(502);
      expect(((await response.json()) as { reason: string }).reason).toBe("upstream_redirect");
      expect(ingest.deliveries.map((delivery) => delivery.url)).toEqual(["/api/4502/envelope/?hsts=0"]);
    });

    it("answers 504 when Sentry does not answer in time", async () => {
      ingest.respondWith(() => {});
      const response = await worker.post(envelope());
      expect(response.status).toBe(504);
      expect(((await response.json()) as { reason: string }).reason).toBe("upstream_timeout");
    });

    it("answers 502 when Sentry cannot be reached", async () => {
      const closed = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: `http://127.0.0.1:${await freePort()}` }, UNLIMITED);
      try {
        const response = await closed.post(envelope());
        expect(response.status).toBe(502);
        expect(((await response.json()) as { reason: string }).reason).toBe("upstream_unreachable");
      } finally {
        await closed.dispose();
      }
    });
  });

  describe("a client that goes away", () => {
    it.each([
      ["with a declared length", true],
      ["sending chunks of unknown length", false],
    ])("leaves nothing delivered when it drops mid-upload %s, and the next request works", async (_name, declared) => {
      const body = attachmentEnvelope(4 * MiB);
      await new Promise<void>((resolve) => {
        const request = httpRequest(new URL(APP_TUNNEL, worker.origin), {
          method: "POST",
          headers: declared ? { "content-length": String(body.length) } : {},
        });
        request.on("error", () => resolve());
        request.write(body.subarray(0, 1 * MiB), () => {
          setTimeout(() => {
            request.destroy();
            resolve();
          }, 300);
        });
      });
      await eventually(() => ingest.arrivals === 1 && ingest.unfinished === 1);
      expect(ingest.deliveries).toHaveLength(0);

      const next = envelope();
      expect((await worker.post(next)).status).toBe(200);
      await eventually(() => ingest.deliveries.length === 1);
      expect(ingest.deliveries[0]!.body.equals(next)).toBe(true);
    });
  });

  describe("the log line", () => {
    it("says what happened to each request, without the DSN key, the IP or cookies", async () => {
      worker.logs.length = 0;
      await worker.post(envelope(), { "cf-connecting-ip": "203.0.113.44", cookie: "session=log-secret" });
      await worker.post(envelope(), { origin: "https://evil.example" });
      await eventually(() => worker.logLines("tunnel").length === 2);
      const [forwarded, rejected] = worker.logLines("tunnel");
      expect(forwarded).toMatchObject({
        event: "tunnel",
        outcome: "forwarded",
        reason: null,
        status: 200,
        org: "4501",
        project: "4502",
        region: "us",
        bytes: envelope().length,
        upstream_status: 200,
      });
      expect(typeof forwarded!.duration_ms).toBe("number");
      expect(rejected).toMatchObject({ outcome: "rejected", reason: "origin_not_allowed", status: 403, upstream_status: null });
      const all = worker.logs.join("\n");
      expect(all).not.toContain("0123456789abcdef0123456789abcdef");
      expect(all).not.toContain("203.0.113.44");
      expect(all).not.toContain("log-secret");
    });
  });
});

/**
 * Declares `length` bytes, sends only the first line of an envelope, and returns whatever the
 * Worker answers before the rest would have come.
 */
async function startUpload(worker: RunningWorker, path: string, length: number): Promise<Response> {
  const answer = await stalledUpload(new URL(path, worker.origin), envelope().subarray(0, 40), { "content-length": String(length) });
  return new Response(new Uint8Array(answer.body), { status: answer.status, headers: answer.headers });
}

function streamOf(bytes: Buffer, chunkSize = 64 * 1024): ReadableStream<Uint8Array<ArrayBuffer>> {
  let offset = 0;
  return new ReadableStream<Uint8Array<ArrayBuffer>>({
    pull(controller) {
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(new Uint8Array(bytes.subarray(offset, offset + chunkSize)));
      offset += chunkSize;
    },
  });
}

describe("a bug in the tunnel itself", () => {
  it("answers 500 and is reported by the Worker's own SDK, straight to Sentry, not through the tunnel", async () => {
    const ingest = await FakeIngest.start();
    // The Worker entry's own wiring, with a bug planted in the tunnel's allow-list lookup.
    const worker = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin }, { plant: "test/worker/fixtures/planted-bug.ts" });
    try {
      // The spelling the planted bug throws on: the app's DSN with a legacy secret.
      const dsn = APP_DSN.replace("@", ":plantedbug@");
      const response = await worker.post(buildEnvelope({ attachmentBytes: 100, dsn }).body, {
        authorization: "Basic dHVubmVsLXVzZXI6dHVubmVsLXBhc3N3b3Jk",
        "x-api-key": "tunnel-api-key-value",
        cookie: "sid=tunnel-cookie-value",
      });
      expect(response.status).toBe(500);
      expect(await response.json()).toMatchObject({ reason: "internal_error" });
      await eventually(() => ingest.deliveries.length === 1, 10_000);
      await ingest.settled();
      expect(ingest.deliveries).toHaveLength(1);
      const [report] = ingest.deliveries;
      expect(report!.url).toBe("/api/4502/envelope/?hsts=0");
      expect(report!.headers["x-sentry-forwarded-for"]).toBeUndefined();
      expect(report!.body.toString("utf8")).toContain("Planted bug: the allow-list lookup failed");
      for (const secret of ["dHVubmVsLXVzZXI6dHVubmVsLXBhc3N3b3Jk", "tunnel-api-key-value", "tunnel-cookie-value"]) {
        expect(report!.body.toString("utf8")).not.toContain(secret);
      }
      expect(worker.logLines("tunnel")).toEqual([expect.objectContaining({ kind: "envelope", outcome: "failed", reason: "internal_error", status: 500 })]);
    } finally {
      await worker.dispose();
      await ingest.stop();
    }
  });
});
