import { eventually } from "@edge-monitoring/tunnel/testing";
import { getTunnelPath } from "sentry-core-11";
import { beforeEach, describe, expect, it } from "vitest";

import { buildEnvelope } from "../support/envelopes";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_DSN, APP_ROUTE, APP_TUNNEL, startWorker, FOREIGN_DSN } from "../support/worker";

/** The page's settings and CSP, as the Worker renders them. */
async function pageSees(fetchPage: (path: string) => Promise<Response>): Promise<{ tunnel: string; reportUri: string | undefined }> {
  const response = await fetchPage("/");
  const html = await response.text();
  const settings = JSON.parse(/<script id="monitoring-settings" type="application\/json" nonce="[^"]+">(.*?)<\/script>/.exec(html)![1]!) as { tunnel: string };
  const reportUri = /report-uri (\S+?)(?:;|$)/.exec(response.headers.get("content-security-policy") ?? "")?.[1];
  return { tunnel: settings.tunnel, reportUri: reportUri && new URL(reportUri).pathname };
}

const UNLIMITED = { rateLimit: { limit: 1_000_000, period: 10 } };
/** Where Sentry's own browser SDK (11.12 and later) posts with `tunnel: true`, as it derives it. */
const SENTRY_PATH = getTunnelPath(APP_DSN)!;
/** What that SDK sends with it. */
const SENTRY_SDK_HEADERS = { "content-type": "application/x-sentry-envelope" };

describe("the tunnel's routes (decision 016)", () => {
  describe("by default", () => {
    const { ingest, worker } = useIngestAndWorker({}, UNLIMITED);
    beforeEach(() => ingest.reset());
    const deliveredAs = (body: Buffer) => ingest.deliveries.find((delivery) => delivery.body.equals(body))?.url;

    it("gives the page a route derived from the DSN, with no query, and its CSP reports a path beside it", async () => {
      expect(await pageSees(worker.fetch)).toEqual({ tunnel: APP_ROUTE, reportUri: `${APP_ROUTE}/csp` });
    });

    it("delivers an envelope posted to the route byte for byte, and one posted to the original URL", async () => {
      for (const path of [APP_ROUTE, APP_TUNNEL]) {
        const { body } = buildEnvelope();
        expect((await worker.post(body, {}, path)).status, path).toBe(200);
        expect(deliveredAs(body), path).toBe("/api/4502/envelope/?hsts=0");
      }
    });

    it("refuses a query on the route, and answers other spellings of it from the tunnel, not from a page", async () => {
      const { body } = buildEnvelope();
      const logged = worker.logLines("tunnel").length;
      const queried = await worker.post(body, {}, `${APP_ROUTE}?o=4501&p=4502`);
      expect(queried.status).toBe(400);
      for (const spelling of [APP_ROUTE.toUpperCase(), `${APP_ROUTE}/`, `/${APP_ROUTE}`, `${APP_ROUTE}/csp/`]) {
        const answer = await worker.post(body, {}, spelling);
        expect(answer.status, spelling).toBe(404);
        expect(answer.headers.get("content-type"), spelling).not.toContain("text/html");
      }
      expect(deliveredAs(body)).toBeUndefined();
      // The Worker's lines reach this process a moment after its answers: one per reason and
      // window for this client, the other refusals of it held and counted by its next line.
      await eventually(() => worker.logLines("tunnel").length >= logged + 2);
      const lines = worker.logLines<{ reason: string }>("tunnel").slice(logged);
      expect(lines.map((line) => line.reason)).toEqual(["invalid_query", "not_found"]);
    });

    it("refuses, with every check it has, what the original route refuses: another project's DSN", async () => {
      const { body } = buildEnvelope({ dsn: FOREIGN_DSN });
      const logged = worker.logLines("tunnel").length;
      const answer = await worker.post(body, {}, APP_ROUTE);
      expect(answer.status).toBe(403);
      await eventually(() => worker.logLines("tunnel").length > logged);
      expect(worker.logLines<{ reason: string }>("tunnel").at(-1)!.reason).toBe("dsn_not_allowed");
      expect(deliveredAs(body)).toBeUndefined();
    });
  });

  describe("Sentry's own tunnel path, for pages whose SDK says tunnel: true", () => {
    const { ingest, worker } = useIngestAndWorker({}, UNLIMITED);
    beforeEach(() => ingest.reset());
    const deliveredAs = (body: Buffer) => ingest.deliveries.find((delivery) => delivery.body.equals(body))?.url;
    /**
     * The reasons of the `count` tunnel lines written since `logged`. A line reaches this process a
     * moment after its answer, so each test waits for its own: none falls into the next test's count.
     */
    const ownLines = async (logged: number, count: number) => {
      await eventually(() => worker.logLines("tunnel").length >= logged + count);
      return worker.logLines<{ reason: string }>("tunnel").slice(logged).map((line) => line.reason);
    };

    it("delivers there byte for byte, with every check of the other routes, and names it at start", async () => {
      const logged = worker.logLines("tunnel").length;
      const { body } = buildEnvelope();
      expect((await worker.post(body, SENTRY_SDK_HEADERS, SENTRY_PATH)).status).toBe(200);
      expect(deliveredAs(body)).toBe("/api/4502/envelope/?hsts=0");
      const stranger = buildEnvelope({ dsn: FOREIGN_DSN }).body;
      expect((await worker.post(stranger, SENTRY_SDK_HEADERS, SENTRY_PATH)).status).toBe(403);
      expect((await worker.post(body, SENTRY_SDK_HEADERS, `${SENTRY_PATH}?o=4501`)).status).toBe(400);
      expect((await worker.post(body, { ...SENTRY_SDK_HEADERS, origin: "https://evil.example" }, SENTRY_PATH)).status).toBe(403);
      // No CSP report path beside it.
      expect((await worker.post(body, { "content-type": "application/csp-report" }, `${SENTRY_PATH}/csp`)).status).toBe(405);
      expect(deliveredAs(stranger)).toBeUndefined();
      const start = worker.logs.find((line) => line.startsWith('{"event":"tunnel_start"'));
      expect(JSON.parse(start!)).toMatchObject({ sentry_sdk_paths_served: [SENTRY_PATH] });
      expect(await ownLines(logged, 3)).toEqual(["dsn_not_allowed", "invalid_query", "origin_not_allowed"]);
    });

    it("serves it with a trailing slash too, as Sentry's tunnel does for tunnel: { trailingSlash: true }", async () => {
      const logged = worker.logLines("tunnel").length;
      const { body } = buildEnvelope();
      expect((await worker.post(body, SENTRY_SDK_HEADERS, `${SENTRY_PATH}/`)).status).toBe(200);
      expect(deliveredAs(body)).toBe("/api/4502/envelope/?hsts=0");
      // Only the one slash: other spellings are still the tunnel's 404.
      expect((await worker.post(body, SENTRY_SDK_HEADERS, `${SENTRY_PATH}//`)).status).toBe(404);
      expect(await ownLines(logged, 1)).toEqual(["not_found"]);
    });

    it("answers a tunnel: true page whose DSN is not allowed, at that DSN's own path, 403 with the tunnel's line", async () => {
      const otherDsn = FOREIGN_DSN;
      const otherPath = getTunnelPath(otherDsn)!;
      const logged = worker.logLines("tunnel").length;
      // From two clients: one client's repeated refusals share one line per window.
      for (const [index, path] of [otherPath, `${otherPath}/`].entries()) {
        const { body } = buildEnvelope({ dsn: otherDsn });
        const answer = await worker.post(body, { ...SENTRY_SDK_HEADERS, "cf-connecting-ip": `198.51.100.${index + 1}` }, path);
        expect(answer.status, path).toBe(403);
        expect(((await answer.json()) as { reason: string }).reason, path).toBe("dsn_not_allowed");
        expect(deliveredAs(body)).toBeUndefined();
      }
      await eventually(() => worker.logLines("tunnel").length >= logged + 2);
      expect(worker.logLines("tunnel").slice(logged)).toEqual(
        Array(2).fill(expect.objectContaining({ kind: "envelope", outcome: "rejected", reason: "dsn_not_allowed", status: 403 })),
      );
      // The same path without the envelope's type is a page path, the app's to answer.
      expect((await worker.post(buildEnvelope({ dsn: otherDsn }).body, {}, otherPath)).status).toBe(405);
    });

    it("is a page path like any other when TUNNEL_SENTRY_PATHS is off", async () => {
      const off = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_SENTRY_PATHS: "off" });
      try {
        const { body } = buildEnvelope();
        // Remix's 405 for a page without an action, not the tunnel's.
        expect((await off.post(body, SENTRY_SDK_HEADERS, SENTRY_PATH)).status).toBe(405);
        expect(off.logLines("tunnel")).toEqual([]);
      } finally {
        await off.dispose();
      }
    });
  });

  describe("after the operator chose another route and retired an earlier one", () => {
    const { ingest, worker } = useIngestAndWorker({ TUNNEL_ROUTE: "/k7q2x9", TUNNEL_RETIRED_ROUTES: "/a3f8c1" }, UNLIMITED);
    beforeEach(() => ingest.reset());
    const deliveredAs = (body: Buffer) => ingest.deliveries.find((delivery) => delivery.body.equals(body))?.url;

    it("gives new pages the chosen route", async () => {
      expect(await pageSees(worker.fetch)).toEqual({ tunnel: "/k7q2x9", reportUri: "/k7q2x9/csp" });
    });

    it("names in its start-up line the route pages post to, every path it serves, and the upstream that is not Sentry", () => {
      const start = worker.logs.find((line) => line.startsWith('{"event":"tunnel_start"'));
      expect(JSON.parse(start!)).toMatchObject({
        // The tests' stand-in ingest is a development upstream, said as such even in production.
        monitoring: `elsewhere: project 4502, environment production, but every envelope and the Worker's own events go to ${ingest.origin} (TUNNEL_UPSTREAM_ORIGIN), not to Sentry`,
        upstream: `elsewhere: TUNNEL_UPSTREAM_ORIGIN sends every envelope to ${ingest.origin}, not to Sentry; it is for development and tests`,
        pages_post_to: "/k7q2x9",
        routes_served: ["/k7q2x9", APP_ROUTE, "/a3f8c1", "/monitoring"],
        csp_reports_served: ["/k7q2x9/csp", `${APP_ROUTE}/csp`, "/a3f8c1/csp", "/monitoring/security-report"],
      });
    });

    it("still delivers what pages loaded before the change post: the retired route, the default it replaced, and the original", async () => {
      for (const path of ["/k7q2x9", "/a3f8c1", APP_ROUTE, APP_TUNNEL]) {
        const { body } = buildEnvelope();
        expect((await worker.post(body, {}, path)).status, path).toBe(200);
        expect(deliveredAs(body), path).toBe("/api/4502/envelope/?hsts=0");
      }
      // A route never configured is a page path like any other: Remix's 405 for a page without an action.
      const { body } = buildEnvelope();
      const unknown = await worker.post(body, {}, "/b4e9d2");
      expect(unknown.status).toBe(405);
      expect(deliveredAs(body)).toBeUndefined();
    });
  });

  it("gives the page the original URL when the operator chose /monitoring", async () => {
    const worker = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_ROUTE: "/monitoring" });
    try {
      expect(await pageSees(worker.fetch)).toEqual({ tunnel: APP_TUNNEL, reportUri: "/monitoring/security-report" });
      const start = worker.logs.find((line) => line.startsWith('{"event":"tunnel_start"'));
      expect(JSON.parse(start!)).toMatchObject({ pages_post_to: APP_TUNNEL, routes_served: ["/monitoring", APP_ROUTE] });
    } finally {
      await worker.dispose();
    }
  });

  it.each([
    ["/sentry-example-page", 'holds "sentry"'],
    ["/build/x", "would shadow /build/"],
    ["/k7q2x9?x=1", "one to four segments"],
    [`${APP_ROUTE}/csp`, `would take envelopes at ${APP_ROUTE}/csp, where the route derived from SENTRY_DSN (${APP_ROUTE}) takes CSP reports`],
  ])("does not start with TUNNEL_ROUTE=%s, and says why", async (route, problem) => {
    const refusal = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_ROUTE: route }).then(
      async (started) => {
        await started.dispose();
        return "it started";
      },
      (error: Error) => error.message,
    );
    expect(refusal).toContain("TUNNEL_ROUTE ");
    expect(refusal).toContain(problem);
  });
});
