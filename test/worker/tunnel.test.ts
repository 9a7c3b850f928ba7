import { request as httpRequest } from "node:http";
import { createServer, type AddressInfo } from "node:net";

import { eventually } from "@edge-monitoring/tunnel/testing";
import { beforeEach, describe, expect, it } from "vitest";

import { buildEnvelope } from "../support/envelopes";
import { FakeIngest } from "../support/fake-ingest";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_DSN, APP_TUNNEL, startWorker } from "../support/worker";

const MiB = 1024 * 1024;
/**
 * The live path without the spool: Sentry's failures reach the client (test/worker/spool.test.ts
 * has the spool), and one client sends far faster than `wrangler.toml`'s limit allows.
 */
const UNLIMITED = { rateLimit: { limit: 1_000_000, period: 10 }, spool: false };

const envelope = () => buildEnvelope().body;
const attachmentEnvelope = (size: number) => buildEnvelope({ attachmentBytes: size }).body;

/**
 * The tunnel in the app's built Worker, over real sockets: what the entry wires (the route, the
 * upstream, the limiter, the log) and what only a socket shows (a client that hangs up, Sentry
 * unreachable, a body that streams through). The tunnel's own cases, every refusal, deadline and
 * header among them, are the package's, in workerd (`packages/tunnel/test/tunnel.workerd.test.ts`).
 */
describe("the tunnel in the built Worker", () => {
  const { ingest, worker } = useIngestAndWorker({ TUNNEL_ALLOWED_ORIGINS: "https://partner.example.com", TUNNEL_TIMEOUT_MS: "2000" }, UNLIMITED);
  beforeEach(() => ingest.reset());

  describe("delivery", () => {
    it("delivers a text envelope byte for byte to the DSN's ingest, and passes Sentry's 2xx back with {} for its body", async () => {
      const body = envelope();
      const response = await worker.post(body, { "content-type": "text/plain;charset=UTF-8" });
      expect(response.status).toBe(200);
      expect(await response.text()).toBe("{}");
      expect(ingest.deliveries).toHaveLength(1);
      const [delivery] = ingest.deliveries;
      expect(delivery!.url).toBe("/api/4502/envelope/?hsts=0");
      expect(delivery!.headers["content-type"]).toBe("application/x-sentry-envelope");
      expect(delivery!.headers["content-length"]).toBe(String(body.length));
      expect(delivery!.body.equals(body)).toBe(true);
    });

    it("streams a 15 MiB envelope through whole", async () => {
      const body = attachmentEnvelope(15 * MiB);
      const response = await worker.post(body);
      expect(response.status).toBe(200);
      expect(ingest.deliveries).toHaveLength(1);
      expect(ingest.deliveries[0]!.body.equals(body)).toBe(true);
    });
  });

  describe("upstream failures", () => {
    it("answers 502 when Sentry cannot be reached", async () => {
      // Sentry's port is held, each connection dropped unanswered: a port only freed could be taken
      // by another test's server before the post (a busy machine's run got that server's 405).
      const dropping = createServer((socket) => socket.destroy());
      await new Promise<void>((resolve) => dropping.listen(0, "127.0.0.1", resolve));
      const { port } = dropping.address() as AddressInfo;
      const closed = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: `http://127.0.0.1:${port}` }, UNLIMITED);
      try {
        const response = await closed.post(envelope());
        expect(response.status).toBe(502);
        expect(((await response.json()) as { reason: string }).reason).toBe("upstream_unreachable");
      } finally {
        await closed.dispose();
        dropping.close();
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
    it("is written for what needs a look, not for an envelope Sentry took, and holds no DSN key, IP or cookie", async () => {
      // The start line says why an envelope Sentry took has no line, and how to have one.
      const start = worker.logs.find((line) => line.startsWith('{"event":"tunnel_start"'));
      expect(JSON.parse(start!)).toMatchObject({ forwarded_lines: expect.stringMatching(/^off: .*TUNNEL_LOG_FORWARDED on logs it/) });
      worker.logs.length = 0;
      await worker.post(envelope(), { "cf-connecting-ip": "203.0.113.44", cookie: "session=log-secret" });
      await worker.post(envelope(), { "cf-connecting-ip": "203.0.113.44", cookie: "session=log-secret", origin: "https://evil.example" });
      await eventually(() => worker.logLines("tunnel").length === 1);
      expect(worker.logLines("tunnel")).toEqual([
        expect.objectContaining({ event: "tunnel", outcome: "rejected", reason: "origin_not_allowed", status: 403, upstream_status: null }),
      ]);
      expect(typeof worker.logLines("tunnel")[0]!.duration_ms).toBe("number");
      const all = worker.logs.join("\n");
      expect(all).not.toContain("0123456789abcdef0123456789abcdef");
      expect(all).not.toContain("203.0.113.44");
      expect(all).not.toContain("log-secret");
    });
  });
});

describe("the client limiter wrangler.toml binds", () => {
  const { ingest, worker } = useIngestAndWorker({}, { spool: false });

  it("lets one client send its share, 60 in 10 s, then answers 429 as Sentry would, and forwards no more", async () => {
    const statuses: number[] = [];
    while (statuses.length < 200 && statuses.at(-1) !== 429) {
      const response = await worker.post(envelope(), { "cf-connecting-ip": "203.0.113.99" });
      statuses.push(response.status);
      if (response.status === 429) expect(response.headers.get("x-sentry-rate-limits")).toBe("10::key");
      await response.arrayBuffer();
    }
    expect(statuses.at(-1)).toBe(429);
    // 60 in a window; a run that straddles two windows gets up to twice that.
    expect(statuses.length).toBeGreaterThan(60);
    await ingest.settled();
    expect(ingest.deliveries).toHaveLength(statuses.length - 1);
  });
});

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
