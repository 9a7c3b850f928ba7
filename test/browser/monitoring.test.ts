import { readFileSync } from "node:fs";

import { eventually } from "@edge-monitoring/tunnel/testing";
import type { Page, Request } from "playwright-core";
import { getTunnelPath } from "sentry-core-11";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";

import { newVisitor } from "../support/chromium";
import { besidesSentAt, parseEnvelope, payloads, received, type Received } from "../support/envelopes";
import { answerOk, type IngestBehaviour } from "../support/fake-ingest";
import { useIngestDevAndChromium } from "../support/ingest-dev-and-chromium";
import { APP_DSN, APP_ROUTE, APP_TUNNEL } from "../support/worker";
import { bundleFixture } from "../support/workerd";

interface Breadcrumb {
  category?: string;
  message?: string;
}

interface BrowserEvent {
  event_id: string;
  message?: string;
  release?: string;
  environment?: string;
  transaction?: string;
  type?: string;
  exception?: { values: { type: string; value: string; stacktrace?: { frames: unknown[] } }[] };
  breadcrumbs?: Breadcrumb[];
  contexts?: { trace?: { trace_id: string; op?: string; status?: string; data?: Record<string, unknown> } };
}

declare global {
  interface Window {
    reportFromStockSdk(dsn: string, tunnel: string, message: string): Promise<string>;
  }
}

/**
 * A page of a site on an older line of Sentry's browser SDK, set up as that line's documentation
 * has it, with `tunnel` given as a URL; no default integration, so only the error it is told of.
 */
const stockSdkScript = (major: number) => `
import { captureException, flush, init, SDK_VERSION } from "sentry-browser-${major}";
window.reportFromStockSdk = async (dsn, tunnel, message) => {
  init({ dsn, tunnel, defaultIntegrations: false });
  captureException(new Error(message));
  await flush(5000);
  return SDK_VERSION;
};
`;

const ENVIRONMENT = "browser-test";
/** A second project, a micro-frontend team's, allowed through the same tunnel. */
/** Another project of the app's organisation. */
const TEAM_DSN = "https://fedcba9876543210fedcba9876543210@o4501.ingest.us.sentry.io/4503";

/** CORS for the page's own requests to the fake ingest, which plays a third-party API here. */
const answerWithCors: IngestBehaviour = (request, response, body) => {
  if (request.url?.startsWith("/api/")) return answerOk(request, response, body);
  response.writeHead(200, {
    "access-control-allow-origin": "*",
    "access-control-allow-headers": "*",
    "content-type": "text/plain",
  });
  response.end("third party");
};

/** A page of the app, hydrated and with the SDK started (it loads after hydration). */
async function openApp(page: Page, url: string): Promise<Page> {
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => "__remixRouter" in window && document.documentElement.dataset.monitoring === "started");
  return page;
}

/** The app's own DSN, sent to the stand-in ingest; the spool retries from 1 s (wrangler.toml says 10), so that an outage's backlog drains within a test. */
function appReportingTo(ingestOrigin: string) {
  return {
    SENTRY_DSN: APP_DSN,
    SENTRY_ENVIRONMENT: ENVIRONMENT,
    TUNNEL_UPSTREAM_ORIGIN: ingestOrigin,
    TUNNEL_SPOOL_RETRY_SECONDS: "1",
  };
}

/** An error thrown outside any handler, as an uncaught bug would be. */
function throwUncaught(page: Page, message: string): Promise<void> {
  return page.evaluate((text) => {
    setTimeout(() => {
      throw new Error(text);
    });
  }, message);
}

describe("monitoring in Chromium, through the tunnel", () => {
  // The ingest also plays a third-party API, which the page's CSP must let it call.
  const { ingest, server, browser } = useIngestDevAndChromium((ingest) => ({
    ...appReportingTo(ingest.origin),
    CSP_CONNECT_ORIGINS: ingest.origin,
    TUNNEL_ALLOWED_DSNS: TEAM_DSN,
  }));
  beforeEach(() => {
    ingest.reset();
    ingest.respondWith(answerWithCors);
  });

  const viaTunnel = (): Received[] => received(ingest.deliveries.filter((delivery) => delivery.url.startsWith("/api/"))).filter((envelope) => envelope.viaTunnel);
  const fromWorker = (): Received[] => received(ingest.deliveries.filter((delivery) => delivery.url.startsWith("/api/"))).filter((envelope) => !envelope.viaTunnel);
  const tunnelEvents = () => payloads<BrowserEvent>(viaTunnel(), "event");
  const eventWith = (text: string) => tunnelEvents().find((event) => JSON.stringify(event.exception ?? event.message).includes(text));

  const open = async (path: string, page?: Page): Promise<Page> => openApp(page ?? (await newVisitor(browser)), `${server.origin}${path}`);

  it("sends an uncaught error through the tunnel's route with the release, environment and DSN, and nothing to Sentry's hosts", async () => {
    const page = await open("/sentry-example-page");
    const sentTo = new Set<string>();
    page.on("request", (request) => void sentTo.add(new URL(request.url()).origin));
    const release = await page.evaluate(() => JSON.parse(document.getElementById("monitoring-settings")!.textContent!).release);
    const posted = page.waitForRequest((request) => request.method() === "POST" && (request.postData() ?? "").includes('"type":"event"'), { timeout: 10_000 });
    await page.getByRole("button", { name: "Throw a client error" }).click();
    // To the page's own origin: the tunnel, never Sentry's host.
    expect(new URL((await posted).url()).origin).toBe(server.origin);
    await eventually(() => eventWith("Self-test: an error thrown in the browser") !== undefined, 15_000);

    const envelope = viaTunnel().find(({ envelope: candidate }) => candidate.items.some((item) => item.header.type === "event"))!;
    const event = eventWith("Self-test: an error thrown in the browser")!;
    expect(envelope.envelope.header.dsn).toBe(APP_DSN);
    expect(event.release).toBe(release);
    expect(event.release).toMatch(/^[0-9a-f]{40}$/);
    expect(event.environment).toBe(ENVIRONMENT);
    await expect.poll(() => page.getByTestId("event-id").textContent()).toBe(event.event_id);
    await expect.poll(() => page.getByTestId("tunnel-answer").textContent()).toBe("The tunnel answered 200.");
    // The page's requests after load: its own origin only (the envelope included); none to Sentry.
    expect([...sentTo]).toEqual([server.origin]);
    await page.close();
  });

  it("loads no Sentry code before the page is interactive: the SDK is one chunk fetched after hydration", async () => {
    const page = await newVisitor(browser);
    const responses: { url: string; beforeLoad: boolean; body: Promise<string> }[] = [];
    let loaded = false;
    page.on("load", () => (loaded = true));
    page.on("response", (response) => {
      if (response.request().resourceType() !== "script") return;
      responses.push({ url: response.url(), beforeLoad: !loaded, body: response.text().catch(() => "") });
    });
    await open("/", page);
    const scripts = await Promise.all(responses.map(async (script) => ({ ...script, body: await script.body })));
    const eager = scripts.filter((script) => script.beforeLoad);
    expect(eager.length).toBeGreaterThan(0);
    // The SDK's own strings, in any minified chunk that holds it.
    for (const script of eager) expect(script.body, script.url).not.toContain("sentry.javascript.");
    expect(scripts.some((script) => !script.beforeLoad && script.body.includes("sentry.javascript."))).toBe(true);
    await page.close();
  });

  it("reports an error thrown before the SDK has loaded, with its stack and the time it was thrown", async () => {
    const page = await newVisitor(browser);
    await page.addInitScript(() => {
      window.addEventListener("DOMContentLoaded", () => {
        setTimeout(() => {
          Object.assign(window, { thrownAt: Date.now() / 1000, sdkThere: document.documentElement.dataset.monitoring === "started" });
          throw new Error("Self-test: thrown before the SDK had loaded");
        });
      });
    });
    await open("/", page);
    const { thrownAt, sdkThere } = await page.evaluate(() => {
      const { thrownAt, sdkThere } = window as unknown as { thrownAt: number; sdkThere: boolean };
      return { thrownAt, sdkThere };
    });
    expect(sdkThere).toBe(false);
    await eventually(() => eventWith("Self-test: thrown before the SDK had loaded") !== undefined, 10_000);
    const event = eventWith("Self-test: thrown before the SDK had loaded")! as BrowserEvent & { timestamp: number };
    expect(event.exception!.values[0]!.stacktrace!.frames.length).toBeGreaterThan(0);
    expect(Math.abs(event.timestamp - thrownAt)).toBeLessThan(0.5);
    await page.close();
  });

  it("keeps at most 30 errors until the SDK loads, hands them over, and counts the rest as dropped", async () => {
    const page = await newVisitor(browser);
    await page.addInitScript(() => {
      window.addEventListener("DOMContentLoaded", () => {
        for (let index = 1; index <= 40; index += 1) {
          setTimeout(() => {
            throw new Error(`early error ${index}`);
          });
        }
      });
    });
    await open("/", page);
    const early = () => tunnelEvents().filter((event) => JSON.stringify(event.exception).includes("early error"));
    await eventually(() => early().length === 30, 15_000);
    expect(early().map((event) => event.exception!.values[0]!.value)).toContain("early error 30");
    await page.evaluate(() => {
      Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
      document.dispatchEvent(new Event("visibilitychange"));
    });
    type ClientReport = { discarded_events?: { reason: string; category: string; quantity: number }[] };
    const overflow = () =>
      payloads<ClientReport>(viaTunnel(), "client_report")
        .flatMap((report) => report.discarded_events ?? [])
        .filter((discarded) => discarded.reason === "queue_overflow" && discarded.category === "error")
        .reduce((sum, discarded) => sum + discarded.quantity, 0);
    await eventually(() => overflow() === 10, 15_000);
    expect(early()).toHaveLength(30);
    await page.close();
  });

  it("holds at most 30 errors, whatever is thrown, on a page whose SDK never loads", async () => {
    const page = await newVisitor(browser);
    await page.route("**/build/_shared/sdk.client-*.js", (route) => route.abort("blockedbyclient"));
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    await page.waitForFunction(() => "__remixRouter" in window);
    const held = await page.evaluate(async () => {
      let thrown = 0;
      for (let index = 0; index < 5_000; index += 1) {
        setTimeout(() => {
          thrown += 1;
          throw new Error(`thrown ${index}`);
        });
      }
      // Until every timer has thrown and been reported, within a bound: a task of its own (a
      // message) sees each timer's task finished, its error reported.
      const nextTask = () => new Promise((resolve) => { const channel = new MessageChannel(); channel.port1.onmessage = resolve; channel.port2.postMessage(null); });
      const deadline = Date.now() + 5_000;
      while (thrown < 5_000 && Date.now() < deadline) await nextTask();
      const taken = window.__takeEarlyErrors!();
      return { errors: taken.errors.length, dropped: taken.dropped };
    });
    expect(held.errors).toBe(30);
    // The 5,000, and the failed load of the SDK's chunk itself.
    expect(held.errors + held.dropped).toBeGreaterThanOrEqual(5_000);
    await page.close();
  });

  it("reports an error thrown while the page hydrates, and shows its reference", async () => {
    const page = await newVisitor(browser);
    await page.goto(`${server.origin}/sentry-example-page?fail=hydration`, { waitUntil: "load" });
    await page.getByTestId("self-test-outcome").getByRole("heading", { name: "Browser error" }).waitFor({ timeout: 10_000 });
    // The reference the page shows is an event Sentry has, of this error, with its stack: React
    // throws it twice (hydrating, then rendering), and the SDK may drop the second as a repeat.
    await page.locator("#error-reference").waitFor({ timeout: 10_000 });
    const reference = await page.locator("#error-reference").getAttribute("data-event-id");
    const referenced = () => tunnelEvents().find((event) => event.event_id === reference);
    await eventually(() => referenced() !== undefined, 10_000, { saw: () => tunnelEvents().map(({ event_id, exception }) => `${event_id} ${JSON.stringify(exception).slice(0, 80)}`) });
    expect(JSON.stringify(referenced()!.exception)).toContain("Self-test: an error thrown while hydrating");
    expect(referenced()!.exception!.values[0]!.stacktrace!.frames.length).toBeGreaterThan(0);
    await page.close();
  });

  it("keeps the last 100 of 150 breadcrumbs", async () => {
    const page = await open("/");
    await page.evaluate(() => {
      for (let i = 1; i <= 150; i++) console.log(`breadcrumb ${i}`);
    });
    await throwUncaught(page, "after 150 breadcrumbs");
    await eventually(() => eventWith("after 150 breadcrumbs") !== undefined, 15_000);
    const breadcrumbs = eventWith("after 150 breadcrumbs")!.breadcrumbs!;
    expect(breadcrumbs).toHaveLength(100);
    const logged = breadcrumbs.filter((crumb) => crumb.category === "console").map((crumb) => crumb.message);
    expect(logged.at(-1)).toBe("breadcrumb 150");
    expect(logged).not.toContain("breadcrumb 50");
    await page.close();
  });

  it("keeps at most 50 stack frames of a deep recursion", async () => {
    const page = await open("/");
    await page.evaluate(() => {
      function descend(depth: number): number {
        if (depth === 0) throw new Error("deep recursion");
        return descend(depth - 1) + 1;
      }
      setTimeout(() => descend(200));
    });
    await eventWhen(() => eventWith("deep recursion"));
    const frames = eventWith("deep recursion")!.exception!.values[0]!.stacktrace!.frames;
    expect(frames.length).toBeLessThanOrEqual(50);
    expect(frames.length).toBeGreaterThan(40);
    await page.close();
  });

  it("drops a noisy error and still sends the real one right after it", async () => {
    const page = await open("/sentry-example-page");
    await page.getByRole("button", { name: "Trigger a noisy browser error" }).click();
    await throwUncaught(page, "a real error after the noise");
    await eventWhen(() => eventWith("a real error after the noise"));
    // The SDK sends in order: once the last envelope is in and nothing is still arriving, an earlier one would be too.
    await ingest.settled();
    expect(tunnelEvents().map((event) => JSON.stringify(event.exception))).toEqual([
      expect.stringContaining("a real error after the noise"),
    ]);
    await page.close();
  });

  it("never reports a thrown redirect, in the browser or on the server", async () => {
    const page = await open("/sentry-example-page");
    await page.getByRole("button", { name: "Throw a redirect in the browser" }).click();
    await page.getByRole("button", { name: "Throw a redirect on the server" }).click();
    await page.getByText("Redirected by the server").waitFor();
    await throwUncaught(page, "marker after the redirects");
    await eventWhen(() => eventWith("marker after the redirects"));
    // The SDK sends in order: once the last envelope is in and nothing is still arriving, an earlier one would be too.
    await ingest.settled();
    expect(tunnelEvents()).toHaveLength(1);
    expect(payloads(fromWorker(), "event")).toEqual([]);
    await page.close();
  });

  it("sends no transaction for a missing page, and one for a real page", async () => {
    const missing = await newVisitor(browser);
    const response = await missing.goto(`${server.origin}/no-such-page`, { waitUntil: "load" });
    expect(response?.status()).toBe(404);
    // The SDK starts after hydration and the load event: a click before it is a navigation it never saw.
    await missing.waitForFunction(() => "__remixRouter" in window && document.documentElement.dataset.monitoring === "started");
    await missing.getByRole("link", { name: "Go to the home page" }).click();
    await missing.getByRole("heading", { name: "Edge Monitoring Tunnel" }).waitFor();

    // The 404's pageload ends when the navigation starts, so it would arrive before the navigation.
    const transactions = () => payloads<BrowserEvent>(viaTunnel(), "transaction");
    const navigationHome = () =>
      transactions().some(({ transaction, contexts }) => contexts?.trace?.op === "navigation" && transaction === "routes/_index");
    // The page stays open until the navigation's transaction is in: it ends when the page goes idle,
    // which a busy machine delays, and a page closed before that sends nothing.
    await eventually(navigationHome, 30_000, { saw: () => transactions().map(({ transaction, contexts }) => `${contexts?.trace?.op} ${transaction}`) });
    await missing.close();
    // The SDK sends in order: once the last envelope is in and nothing is still arriving, an earlier one would be too.
    await ingest.settled();
    expect(transactions().map((transaction) => transaction.transaction)).not.toContain("routes/$");
    const serverTransactions = payloads<BrowserEvent>(fromWorker(), "transaction").map((transaction) => transaction.contexts?.trace?.data?.["http.response.status_code"]);
    expect(serverTransactions).not.toContain(404);
  });

  it("continues the server's trace in the pageload transaction", async () => {
    const page = await open("/");
    const serverTrace = await page.getAttribute('meta[name="sentry-trace"]', "content");
    await page.close();
    await eventually(() => payloads<BrowserEvent>(viaTunnel(), "transaction").some((transaction) => transaction.contexts?.trace?.op === "pageload"), 15_000);
    const pageload = payloads<BrowserEvent>(viaTunnel(), "transaction").find((transaction) => transaction.contexts?.trace?.op === "pageload")!;
    expect(serverTrace).toMatch(/^[0-9a-f]{32}-/);
    expect(pageload.contexts!.trace!.trace_id).toBe(serverTrace!.slice(0, 32));
  });

  it("adds trace headers to same-origin fetch and XHR, and not to another origin", async () => {
    const page = await open("/");
    const requests: Request[] = [];
    page.on("request", (request) => requests.push(request));
    await page.evaluate(async (thirdParty) => {
      await fetch("/build/../favicon.svg?fetch");
      await new Promise<void>((resolve) => {
        const xhr = new XMLHttpRequest();
        xhr.open("GET", "/favicon.svg?xhr");
        xhr.onloadend = () => resolve();
        xhr.send();
      });
      await fetch(`${thirdParty}/third-party`);
    }, ingest.origin);

    const headersOf = async (fragment: string) => (await requests.find((request) => request.url().includes(fragment))!.allHeaders());
    for (const fragment of ["favicon.svg?fetch", "favicon.svg?xhr"]) {
      const headers = await headersOf(fragment);
      expect(headers["sentry-trace"], fragment).toMatch(/^[0-9a-f]{32}-[0-9a-f]{16}/);
      expect(headers.baggage, fragment).toContain("sentry-trace_id=");
      expect(headers.baggage!.length).toBeLessThanOrEqual(8192);
    }
    const thirdParty = await headersOf("/third-party");
    expect(thirdParty["sentry-trace"]).toBeUndefined();
    expect(thirdParty.baggage).toBeUndefined();
    // The GET itself; the visitor's CF-Connecting-IP also makes the browser preflight it.
    const atIngest = ingest.deliveries.filter((delivery) => delivery.url === "/third-party" && delivery.method === "GET");
    expect(atIngest).toHaveLength(1);
    expect(JSON.stringify(atIngest[0]!.headers)).not.toMatch(/sentry-trace|baggage/);
    await page.close();
  });

  it("backs off after a 429: nothing more in that category is sent during the window", async () => {
    ingest.respondWith((request, response, body) => {
      if (request.url?.startsWith("/api/") && body.includes('"type":"event"')) {
        // Short, because the tunnel remembers it too and holds error envelopes at the edge meanwhile.
        response.writeHead(429, { "retry-after": "4", "x-sentry-rate-limits": "4:error:organization" });
        response.end();
        return;
      }
      answerWithCors(request, response, body);
    });
    const page = await open("/sentry-example-page");
    await page.getByRole("button", { name: "Throw a client error" }).click();
    await expect.poll(() => page.getByTestId("tunnel-answer").textContent(), { timeout: 15_000 }).toBe("The tunnel answered 429.");
    // Sentry's 429 for errors only, not the tunnel's own limit, which would hold back every category.
    expect(eventWith("Self-test: an error thrown in the browser")).toBeDefined();
    const before = ingest.deliveries.length;
    await throwUncaught(page, "during the back-off");
    // The SDK counts what it held back and reports the count when the page is hidden: proof that
    // it held the error back, rather than a wait that hopes nothing comes.
    await page.evaluate(() => {
      Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
      document.dispatchEvent(new Event("visibilitychange"));
    });
    type ClientReport = { discarded_events?: { reason: string; category: string }[] };
    const heldBack = () =>
      payloads<ClientReport>(viaTunnel(), "client_report").some((report) =>
        report.discarded_events?.some((discarded) => discarded.reason === "ratelimit_backoff" && discarded.category === "error"),
      );
    await eventually(heldBack, 15_000, { saw: () => ({ clientReports: payloads<ClientReport>(viaTunnel(), "client_report"), tunnelAnswers: server.output().match(/"reason":"[a-z_]+"/g) }) });
    const later = ingest.deliveries.slice(before).map((delivery) => delivery.body.toString("utf8"));
    expect(later.filter((body) => body.includes("during the back-off"))).toEqual([]);
    await page.close();
    // The tests after this one send errors: wait until the tunnel no longer holds them.
    ingest.respondWith(answerWithCors);
    const probe = `${JSON.stringify({ dsn: APP_DSN })}\n{"type":"event"}\n{}\n`;
    // Every 500 ms: faster, the probes alone would bring this client to the tunnel's own limit.
    await eventually(async () => (await fetch(`${server.origin}${APP_TUNNEL}`, { method: "POST", body: probe })).status === 200, 10_000, { pollMs: 500 });
  });

  it("keeps errors captured offline and sends them all when the network is back", async () => {
    const page = await open("/sentry-example-page");
    await page.context().setOffline(true);
    for (const index of [1, 2, 3]) await throwUncaught(page, `offline error ${index}`);
    // Each failed send waits in the SDK's IndexedDB store.
    const stored = () =>
      page.evaluate(
        () =>
          new Promise<number>((resolve, reject) => {
            const open = indexedDB.open("sentry-offline");
            open.onerror = () => reject(open.error);
            open.onsuccess = () => {
              const db = open.result;
              if (!db.objectStoreNames.contains("queue")) return resolve(0);
              const count = db.transaction("queue").objectStore("queue").count();
              count.onsuccess = () => resolve(count.result);
              count.onerror = () => reject(count.error);
            };
          }),
      );
    // The three errors, and whatever else the page had to send (its session, its pageload).
    await expect.poll(stored, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    expect(tunnelEvents().filter((event) => JSON.stringify(event.exception).includes("offline error"))).toEqual([]);
    await page.context().setOffline(false);
    await eventually(() => [1, 2, 3].every((index) => eventWith(`offline error ${index}`) !== undefined), 30_000);
    await page.close();
  });

  it("sends a log once the SDK's idle flush runs", async () => {
    const page = await open("/sentry-example-page");
    await page.getByRole("button", { name: "Send a log" }).click();
    await eventually(() => payloads<{ items: { body: string }[] }>(viaTunnel(), "log").length > 0, 15_000);
    const logs = payloads<{ items: { body: string; level: string }[] }>(viaTunnel(), "log").flatMap((container) => container.items);
    expect(logs).toContainEqual(expect.objectContaining({ body: "Self-test: a log from the browser", level: "info" }));
    await expect.poll(() => page.getByTestId("tunnel-answer").textContent()).toBe("The tunnel answered 200.");
    await page.close();
  });

  it("loses nothing when one page sends over 200 KB of envelopes", async () => {
    const page = await open("/");
    const count = 12;
    await page.evaluate((errors) => {
      const filler = "x".repeat(200);
      for (let i = 0; i < 100; i++) console.log(`volume ${i} ${filler}`);
      for (let i = 0; i < errors; i++) {
        setTimeout(() => {
          throw new Error(`volume error ${i}`);
        });
      }
    }, count);
    // Distinct events: a send that failed after it was delivered is stored and sent again by the
    // offline transport, and Sentry drops the repeated event id.
    const volumeIds = () => new Set(tunnelEvents().filter((event) => JSON.stringify(event.exception).includes("volume error")).map((event) => event.event_id));
    await eventually(() => volumeIds().size === count, 30_000);
    const volume = viaTunnel().filter(({ envelope }) => envelope.items.some((item) => item.header.type === "event"));
    const distinct = new Map(volume.map((envelope) => [envelope.envelope.header.event_id, envelope.bytes]));
    expect(distinct.size).toBe(count);
    expect([...distinct.values()].reduce((total, bytes) => total + bytes, 0)).toBeGreaterThan(200 * 1024);
    await page.close();
  });

  it("reports a server action's error from the Worker, with its reference on the self-test page", async () => {
    const page = await open("/sentry-example-page");
    await page.getByRole("button", { name: "Throw a server error" }).click();
    await page.getByTestId("self-test-outcome").getByRole("heading", { name: "Server error" }).waitFor();
    // Still the self-test, every button in place.
    await page.getByRole("heading", { name: "Self-test" }).waitFor();
    expect(await page.getByRole("button").count()).toBeGreaterThanOrEqual(6);
    const reference = await page.locator("#error-reference").getAttribute("data-event-id");
    await eventually(() => payloads<BrowserEvent>(fromWorker(), "event").length === 1, 15_000);
    const [event] = payloads<BrowserEvent>(fromWorker(), "event");
    expect(event!.exception!.values[0]!.value).toBe("Self-test: an error thrown in a server action");
    expect(event!.environment).toBe(ENVIRONMENT);
    expect(reference).toBe(event!.event_id);
    await page.waitForFunction(() => "__remixRouter" in window);
    // The SDK sends in order: once the last envelope is in and nothing is still arriving, an earlier one would be too.
    await ingest.settled();
    expect(tunnelEvents()).toEqual([]);
    await page.close();
  });

  async function eventWhen(find: () => BrowserEvent | undefined): Promise<void> {
    await eventually(() => find() !== undefined, 15_000);
  }

  it("delivers an error from a stock SDK 11 that says tunnel: true, at the path that SDK derives from the DSN", async () => {
    const script = readFileSync(await bundleFixture("test/browser/fixtures/sentry-tunnel-true.ts"), "utf8");
    // The page's CSP lets no test script in; the set-up is the SDK's, not the page's.
    const page = await newVisitor(browser, { bypassCSP: true });
    const posted: string[] = [];
    page.on("request", (request) => {
      if (request.method() === "POST") posted.push(new URL(request.url()).pathname);
    });
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    await page.addScriptTag({ content: script, type: "module" });
    await page.waitForFunction(() => "reportWithTunnelTrue" in window);
    await page.evaluate((dsn) => window.reportWithTunnelTrue(dsn), APP_DSN);

    const delivered = () => ingest.deliveries.find((delivery) => delivery.body.toString("utf8").includes("A stock SDK 11 page with tunnel: true"));
    await eventually(() => delivered() !== undefined, 10_000);
    expect(delivered()!.url).toBe("/api/4502/envelope/?hsts=0");
    expect(posted).toContain(getTunnelPath(APP_DSN));
    await page.close();
  });

  describe.each([7, 8, 9])("a stock SDK %i page", (major) => {
    let script: string;
    beforeAll(async () => {
      script = readFileSync(await bundleFixture(`test/browser/fixtures/stock-sdk-${major}.ts`, stockSdkScript(major)), "utf8");
    });

    it.each([APP_ROUTE, APP_TUNNEL])("delivers an error posted to %s as the browser posted it", async (tunnel) => {
      const page = await newVisitor(browser);
      // A page of the app's origin with nothing of the app on it: this SDK line alone.
      const pageUrl = `${server.origin}/a-page-on-sdk-${major}`;
      await page.route(pageUrl, (route) => route.fulfill({ contentType: "text/html", body: "<!doctype html><title>A stock SDK</title>" }));
      const posted: Buffer[] = [];
      page.on("request", (request) => {
        if (request.method() === "POST" && request.url() === `${server.origin}${tunnel}`) posted.push(request.postDataBuffer()!);
      });
      await page.goto(pageUrl, { waitUntil: "load" });
      await page.addScriptTag({ content: script, type: "module" });
      await page.waitForFunction(() => "reportFromStockSdk" in window);
      const message = `A stock SDK ${major} page posting to ${tunnel}`;
      const version = await page.evaluate(({ dsn, tunnel, message }) => window.reportFromStockSdk(dsn, tunnel, message), { dsn: APP_DSN, tunnel, message });
      expect(version.split(".")[0]).toBe(String(major));

      const delivered = () => ingest.deliveries.find((delivery) => delivery.body.toString("utf8").includes(message));
      await eventually(() => delivered() !== undefined, 10_000);
      expect(delivered()!.url).toBe("/api/4502/envelope/?hsts=0");
      expect(parseEnvelope(delivered()!.body).header.sdk).toMatchObject({ name: "sentry.javascript.browser", version });
      // Sentry is up in this Worker: the envelope went live, the bytes the browser posted.
      expect(posted.some((body) => body.equals(delivered()!.body))).toBe(true);
      await page.close();
    });
  });

  it("reports a micro-frontend's errors to two projects, multiplexed by the SDK through the one tunnel", async () => {
    const script = readFileSync(await bundleFixture("test/browser/fixtures/micro-frontend.ts"), "utf8");
    // The page's CSP lets no test script in; the set-up is the SDK's, not the page's.
    const page = await newVisitor(browser, { bypassCSP: true });
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    await page.addScriptTag({ content: script, type: "module" });
    await page.waitForFunction(() => "reportFromTeams" in window);
    const tunnel = await page.evaluate(() => JSON.parse(document.getElementById("monitoring-settings")!.textContent!).tunnel as string);
    await page.evaluate((settings) => window.reportFromTeams(settings), { appDsn: APP_DSN, teamDsn: TEAM_DSN, tunnel });

    const projectOf = (text: string) => ingest.deliveries.find((delivery) => delivery.url.startsWith("/api/") && delivery.body.toString("utf8").includes(text))?.url;
    await eventually(() => projectOf("the checkout team's error") !== undefined && projectOf("the app's own error") !== undefined, 10_000);
    expect(projectOf("the checkout team's error")).toBe("/api/4503/envelope/?hsts=0");
    expect(projectOf("the app's own error")).toBe("/api/4502/envelope/?hsts=0");
    await page.close();
  });
});

/** The outage error an envelope's event reports (not one its breadcrumbs mention), if any. */
function outageErrorOf(body: Buffer | null): string | undefined {
  if (!body?.includes("outage error")) return undefined;
  const [event] = payloads<BrowserEvent>([{ viaTunnel: true, envelope: parseEnvelope(body), bytes: body.length }], "event");
  const value = event?.exception?.values[0]?.value;
  return value && /^outage error \d$/.test(value) ? value : undefined;
}

/**
 * Sentry down, in a Worker of its own: after three failures the tunnel stops asking Sentry for a
 * while and stores everything, which no other test must meet.
 */
describe("monitoring in Chromium while Sentry is down", () => {
  const { ingest, server, browser } = useIngestDevAndChromium((ingest) => appReportingTo(ingest.origin));

  it("loses nothing: the page is answered 202, and each error reaches Sentry once it is back, as the browser sent it", async () => {
    let refused = 0;
    ingest.respondWith((request, response, body) => {
      if (request.url?.startsWith("/api/") && body.includes("outage error")) {
        refused += 1;
        response.writeHead(503, { "content-type": "text/plain" });
        response.end("down");
        return;
      }
      answerWithCors(request, response, body);
    });
    const page = await newVisitor(browser);
    const sent = new Map<string, { body: Buffer; status?: number }>();
    page.on("response", (answer) => {
      const error = outageErrorOf(answer.request().postDataBuffer());
      if (error) sent.set(error, { body: answer.request().postDataBuffer()!, status: answer.status() });
    });
    await openApp(page, `${server.origin}/sentry-example-page`);
    for (const index of [1, 2, 3]) await throwUncaught(page, `outage error ${index}`);
    await eventually(() => refused >= 3 && sent.size === 3, 15_000, { saw: () => ({ refused, sent: [...sent.keys()] }) });
    // Stored, not lost: the tunnel answered 202 for each, and said so in its log.
    expect([...sent.values()].map(({ status }) => status)).toEqual([202, 202, 202]);
    // The Worker's output reaches this process through wrangler's pipe, after the answers may have.
    const spooledLines = () => server.output().match(/"outcome":"spooled"/g)?.length ?? 0;
    await eventually(() => spooledLines() >= 3, 10_000, { saw: spooledLines });

    // Sentry is back: each arrives, once, its items the bytes the browser posted; only `sent_at`
    // in its header has moved, by the time the spool held it.
    ingest.respondWith(answerWithCors);
    const recovery = ingest.deliveries.length;
    const arrivals = (error: string) => ingest.deliveries.slice(recovery).filter((delivery) => outageErrorOf(delivery.body) === error);
    await eventually(() => [1, 2, 3].every((index) => arrivals(`outage error ${index}`).length > 0), 45_000);
    for (const [error, { body }] of sent) {
      const [arrived, ...again] = arrivals(error);
      expect(again, error).toEqual([]);
      expect(arrived!.url).toBe("/api/4502/envelope/?hsts=0");
      expect(besidesSentAt(arrived!.body)).toEqual(besidesSentAt(body));
    }
    await page.close();
  });
});
