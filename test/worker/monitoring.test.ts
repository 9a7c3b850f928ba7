import { readdirSync } from "node:fs";

import { eventually } from "@edge-monitoring/tunnel/testing";
import { beforeEach, describe, expect, it } from "vitest";

import { payloads, received } from "../support/envelopes";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_ROUTE, APP_DSN } from "../support/worker";
import { root } from "../support/workerd";

interface SentryEvent {
  event_id: string;
  release?: string;
  environment?: string;
  transaction?: string;
  exception?: { values: { type: string; value: string }[] };
  contexts?: { trace?: { trace_id: string; status?: string; data?: Record<string, unknown> } };
}

describe("the Worker's own monitoring", () => {
  const { ingest, worker } = useIngestAndWorker({ SENTRY_ENVIRONMENT: "ci" });
  beforeEach(() => ingest.reset());

  const fromWorker = () => received(ingest.deliveries).filter((envelope) => !envelope.viaTunnel);

  it("hands the page its public DSN, the tunnel path, the release and the server's trace", async () => {
    const html = await (await worker.fetch("/")).text();
    const settings = JSON.parse(/<script id="monitoring-settings" type="application\/json" nonce="[^"]+">(.*?)<\/script>/.exec(html)![1]!);
    expect(settings).toMatchObject({
      dsn: APP_DSN,
      tunnel: APP_ROUTE,
      environment: "ci",
      tracesSampleRate: 1,
    });
    expect(settings.release).toMatch(/^[0-9a-f]{40}$/);
    expect(html).toMatch(/<meta name="sentry-trace" content="[0-9a-f]{32}-[0-9a-f]{16}(-[01])?"\/>/);
    expect(html).toMatch(/<meta name="baggage" content="[^"]*sentry-environment=ci[^"]*"\/>/);
  });

  it("reports a server action's error from the Worker, and shows its reference on the self-test page", async () => {
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
    expect(html).toContain('id="self-test-title"');
    expect(html).not.toContain("Something went wrong");
  });

  it("records a 500 as internal_error and drops the transaction of a 404", async () => {
    await worker.fetch("/sentry-example-page/loader-error");
    await worker.fetch("/no/such/page");
    await worker.fetch("/");
    // The page's transaction is sent last: once it is in, and nothing is still arriving, the 404's would be too.
    await eventually(() => payloads<SentryEvent>(fromWorker(), "transaction").some((event) => event.transaction === "GET /"));
    await ingest.settled();
    // Only this test's requests, all GETs: on a busy machine the test before's POST can arrive late
    // (a third transaction was seen once there); the message names what came.
    const transactions = payloads<SentryEvent>(fromWorker(), "transaction")
      .filter((event) => event.transaction?.startsWith("GET "))
      .map(({ contexts }) => ({ status: contexts?.trace?.status, code: contexts?.trace?.data?.["http.response.status_code"] }));
    expect(transactions).toEqual(
      expect.arrayContaining([
        { status: "internal_error", code: 500 },
        { status: "ok", code: 200 },
      ]),
    );
    expect(transactions, JSON.stringify(payloads<SentryEvent>(fromWorker(), "transaction").map((event) => event.transaction))).toHaveLength(2);
  });

  it("never reports on the tunnel's own requests, by any spelling of its path", async () => {
    const envelope = Buffer.from(`${JSON.stringify({ dsn: APP_DSN })}\n{"type":"event"}\n{}\n`);
    const traced = {
      "sentry-trace": "0123456789abcdef0123456789abcdef-0123456789abcdef-1",
      baggage: "sentry-trace_id=0123456789abcdef0123456789abcdef,sentry-sampled=true",
    };
    const query = "?o=4501&p=4502&r=us";
    const spellings = ["/monitoring/", "/MONITORING", "/Monitoring/", "//monitoring", "/monitoring//", "/%6Donitoring", "/%6donitoring%2F", "/%256Donitoring"];
    // The pages' route, spelled otherwise: the same tunnel, with no query.
    const routeSpellings = [APP_ROUTE.toUpperCase(), `${APP_ROUTE}/`, `/${APP_ROUTE}`, `/%25${APP_ROUTE.charCodeAt(1).toString(16)}${APP_ROUTE.slice(2)}`];
    expect((await worker.fetch(`/monitoring${query}`, { method: "POST", body: new Uint8Array(envelope), headers: traced })).status).toBe(200);
    for (const path of [...spellings.map((spelling) => `${spelling}${query}`), ...routeSpellings]) {
      for (const method of ["POST", "GET"]) {
        const response = await worker.fetch(path, { method, headers: traced, ...(method === "POST" ? { body: new Uint8Array(envelope) } : {}) });
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(await response.json(), `${method} ${path}`).toMatchObject({ reason: "not_found" });
      }
    }
    expect((await worker.fetch(`/monitoring${query}`, { method: "POST", body: new Uint8Array(envelope), headers: { ...traced, origin: "https://evil.example" } })).status).toBe(403);
    // A page's transaction arrives after every tunnel request above: whatever they traced would be in by then.
    await worker.fetch("/");
    await eventually(() => payloads<SentryEvent>(fromWorker(), "transaction").some((event) => event.transaction === "GET /"));

    const transactions = payloads<SentryEvent>(fromWorker(), "transaction").map((transaction) => transaction.transaction);
    expect(transactions).toEqual(["GET /"]);
    const forwarded = ingest.deliveries.filter((delivery) => delivery.headers["x-sentry-forwarded-for"] !== undefined);
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]!.body.equals(envelope)).toBe(true);
    for (const header of ["sentry-trace", "baggage", "traceparent"]) expect(forwarded[0]!.headers[header]).toBeUndefined();
  });

  it("sends no credential to Sentry in its own events: page views and errors alike", async () => {
    const secrets = {
      authorization: "Basic c2l0ZS11c2VyOnNpdGUtcGFzc3dvcmQ=",
      "proxy-authorization": "Bearer proxy-secret-value",
      "x-api-key": "api-key-secret-value",
      "x-auth-token": "auth-token-secret-value",
      "x-session-secret": "session-secret-value",
      cookie: "sid=cookie-secret-value",
    };
    const query = "?access_token=query-secret-value&api_key=query-key-value&page=2";
    await worker.fetch(`/${query}`, { headers: secrets });
    await worker.fetch(`/sentry-example-page${query}`, {
      method: "POST",
      body: new URLSearchParams({ intent: "server-error" }),
      headers: secrets,
    });
    await eventually(() => {
      const own = fromWorker();
      return payloads<SentryEvent>(own, "event").length === 1 && payloads<SentryEvent>(own, "transaction").length >= 2;
    });
    const sent = ingest.deliveries.map((delivery) => delivery.body.toString("utf8")).join("\n");
    for (const value of [...Object.values(secrets), "c2l0ZS11c2Vy", "query-secret-value", "query-key-value"]) {
      expect(sent).not.toContain(value.replace(/^sid=/, ""));
    }
    // What describes the request still arrives.
    expect(sent).toContain("page=2");
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
