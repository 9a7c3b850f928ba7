import { readdirSync } from "node:fs";

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { payloads, received } from "../support/envelopes";
import { eventually, FakeIngest } from "../support/fake-ingest";
import { APP_DSN, root, startWorker, type RunningWorker } from "../support/worker";

interface SentryEvent {
  event_id: string;
  release?: string;
  environment?: string;
  transaction?: string;
  exception?: { values: { type: string; value: string }[] };
  contexts?: { trace?: { trace_id: string; status?: string; data?: Record<string, unknown> } };
}

describe("the Worker's own monitoring", () => {
  let ingest: FakeIngest;
  let worker: RunningWorker;
  beforeAll(async () => {
    ingest = await FakeIngest.start();
    worker = await startWorker({
      SENTRY_DSN: APP_DSN,
      SENTRY_ENVIRONMENT: "ci",
      TUNNEL_UPSTREAM_ORIGIN: ingest.origin,
    });
  });
  afterAll(async () => {
    await worker?.dispose();
    await ingest?.stop();
  });
  beforeEach(() => ingest.reset());

  const fromWorker = () => received(ingest.deliveries).filter((envelope) => !envelope.viaTunnel);

  it("hands the page its public DSN, the tunnel path, the release and the server's trace", async () => {
    const html = await (await worker.fetch("/")).text();
    const settings = JSON.parse(/<script id="monitoring-settings" type="application\/json">(.*?)<\/script>/.exec(html)![1]!);
    expect(settings).toMatchObject({
      dsn: APP_DSN,
      tunnel: "/monitoring?o=4501&p=4502&r=us",
      environment: "ci",
      tracesSampleRate: 1,
    });
    expect(settings.release).toMatch(/^[0-9a-f]{40}$/);
    expect(html).toMatch(/<meta name="sentry-trace" content="[0-9a-f]{32}-[0-9a-f]{16}(-[01])?"\/>/);
    expect(html).toMatch(/<meta name="baggage" content="[^"]*sentry-environment=ci[^"]*"\/>/);
  });

  it("reports a server action's error from the Worker, and shows its reference on the error page", async () => {
    const response = await worker.fetch("/sentry-example-page", {
      method: "POST",
      body: new URLSearchParams({ intent: "server-error" }),
    });
    const html = await response.text();
    expect(response.status).toBe(500);
    await eventually(() => payloads<SentryEvent>(fromWorker(), "event").length === 1);
    const [event] = payloads<SentryEvent>(fromWorker(), "event");
    expect(event!.exception!.values[0]!.value).toBe("Self-test: an error thrown in a server action");
    expect(event!.environment).toBe("ci");
    expect(event!.release).toMatch(/^[0-9a-f]{40}$/);
    expect(html).toContain(`data-event-id="${event!.event_id}"`);
  });

  it("records a 500 as internal_error and drops the transaction of a 404", async () => {
    await worker.fetch("/sentry-example-page/loader-error");
    await worker.fetch("/no/such/page");
    await worker.fetch("/");
    await eventually(() => payloads<SentryEvent>(fromWorker(), "transaction").length >= 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const transactions = payloads<SentryEvent>(fromWorker(), "transaction").map(({ contexts }) => ({
      status: contexts?.trace?.status,
      code: contexts?.trace?.data?.["http.response.status_code"],
    }));
    expect(transactions).toEqual(
      expect.arrayContaining([
        { status: "internal_error", code: 500 },
        { status: "ok", code: 200 },
      ]),
    );
    expect(transactions).toHaveLength(2);
  });

  it("never reports on the tunnel's own requests, by either path", async () => {
    const envelope = Buffer.from(`${JSON.stringify({ dsn: APP_DSN })}\n{"type":"event"}\n{}\n`);
    const traced = {
      "sentry-trace": "0123456789abcdef0123456789abcdef-0123456789abcdef-1",
      baggage: "sentry-trace_id=0123456789abcdef0123456789abcdef,sentry-sampled=true",
    };
    for (const path of ["/monitoring?o=4501&p=4502&r=us", "/monitoring/?o=4501&p=4502&r=us"]) {
      expect((await worker.fetch(path, { method: "POST", body: new Uint8Array(envelope), headers: traced })).status).toBe(200);
      expect((await worker.fetch(path, { method: "POST", body: new Uint8Array(envelope), headers: { ...traced, origin: "https://evil.example" } })).status).toBe(403);
    }
    await worker.fetch("/");
    await eventually(() => payloads<SentryEvent>(fromWorker(), "transaction").length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 300));

    const transactions = payloads<SentryEvent>(fromWorker(), "transaction").map((transaction) => transaction.transaction);
    expect(transactions).toEqual(["GET /"]);
    const forwarded = ingest.deliveries.filter((delivery) => delivery.headers["x-sentry-forwarded-for"] !== undefined);
    expect(forwarded).toHaveLength(2);
    for (const delivery of forwarded) {
      expect(delivery.body.equals(envelope)).toBe(true);
      expect(delivery.headers["sentry-trace"]).toBeUndefined();
      expect(delivery.headers.baggage).toBeUndefined();
      expect(delivery.headers.traceparent).toBeUndefined();
    }
  });

  it("never serves source maps", async () => {
    const clientMap = readdirSync(`${root}public/build`).find((name) => name.endsWith(".js.map"));
    expect(clientMap).toBeDefined();
    for (const path of [`/build/${clientMap}`, "/build/index.js.map", "/index.js.map"]) {
      const response = await worker.fetch(path);
      const body = await response.text();
      expect(response.status, path).toBe(404);
      expect(body, path).not.toContain('"mappings"');
    }
  });
});
