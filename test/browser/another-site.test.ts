import { createServer, type Server } from "node:http";

import { eventually } from "@edge-monitoring/tunnel/testing";
import type { Browser, BrowserContext } from "playwright-core";
import { getTunnelPath } from "sentry-core-11";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { launchChromium } from "../support/chromium";
import { payloads, received } from "../support/envelopes";
import { FakeIngest } from "../support/fake-ingest";
import { startTogether } from "../support/start-together";
import { APP_DSN, APP_ROUTE, APP_TUNNEL } from "../support/worker";
import { startWranglerDev, type DevServer } from "../support/wrangler-dev";

declare global {
  interface Window {
    fired: number;
  }
}

/** Every path the tunnel answers, some spellings of them, and the app's pages. */
const TARGETS = [APP_TUNNEL, "/monitoring/security-report", APP_ROUTE, `${APP_ROUTE}/csp`, getTunnelPath(APP_DSN)!, `${APP_ROUTE}/`, "/", "/sentry-example-page"];

/**
 * Another site's page, as a hostile ad or widget would be written: without reading a single answer,
 * it has the visitor's browser load every path of the app as an image, post an envelope to each with
 * a no-cors fetch and a beacon, and frame the home page, a round every 300 ms for as long as it is open.
 */
function hostilePage(app: string): string {
  const envelope = `${JSON.stringify({ dsn: APP_DSN })}\n{"type":"event"}\n{"message":"from another site"}\n`;
  return `<!doctype html><title>Another site</title><body><script>
const app = ${JSON.stringify(app)};
const targets = ${JSON.stringify(TARGETS)};
const envelope = ${JSON.stringify(envelope)};
window.fired = 0;
function round() {
  for (const target of targets) {
    new Image().src = app + target;
    fetch(app + target, { method: "POST", mode: "no-cors", body: envelope }).catch(() => {});
    navigator.sendBeacon(app + target, envelope);
    window.fired += 3;
  }
  const frame = document.createElement("iframe");
  frame.src = app + "/?framed-by-another-site";
  document.body.append(frame);
  setTimeout(() => frame.remove(), 250);
}
round();
setInterval(round, 300);
</script>`;
}

describe("another site's page cannot silence a visitor's monitoring (decision 028)", () => {
  let ingest: FakeIngest;
  let server: DevServer;
  let browser: Browser;
  let hostile: Server;
  beforeAll(async () => {
    ingest = await FakeIngest.start();
    // wrangler.toml's limiter, 60 per 10 s: the visitor's share.
    [server, browser] = await startTogether([startWranglerDev({ SENTRY_DSN: APP_DSN, SENTRY_ENVIRONMENT: "staging", TUNNEL_UPSTREAM_ORIGIN: ingest.origin }), launchChromium()]);
    // On `localhost`, while the app is on 127.0.0.1: another site, not only another origin.
    hostile = createServer((_request, response) => response.writeHead(200, { "content-type": "text/html" }).end(hostilePage(server.origin)));
    await new Promise<void>((resolve) => hostile.listen(0, "localhost", resolve));
  }, 120_000);
  afterAll(async () => {
    await new Promise((resolve) => hostile?.close(resolve));
    await browser?.close();
    await server?.stop();
    await ingest?.stop();
  });

  // Under fire, wrangler dev answers slowly on a busy machine (a navigation was seen past 30 s): each
  // wait is for its condition, with bounds that hold there.
  it("delivers the visitor's own error, CSP report and page view while it fires at every path, well past the share", { timeout: 300_000 }, async () => {
    // One visitor, one address at the edge (wrangler dev's own, 127.0.0.1): both pages spend one
    // share. Each in a context of its own: wrangler dev speaks HTTP/1.1, and a browser holds six
    // connections to a host per context, which the hostile page's backlog of requests would keep
    // from the visitor's page on a busy machine; Cloudflare's edge multiplexes them over HTTP/2.
    const hostileContext: BrowserContext = await browser.newContext();
    const context: BrowserContext = await browser.newContext();
    for (const each of [hostileContext, context]) each.setDefaultTimeout(90_000);
    const attacker = await hostileContext.newPage();
    const { port } = hostile.address() as { port: number };
    await attacker.goto(`http://localhost:${port}/`, { waitUntil: "load" });
    await attacker.waitForFunction(() => window.fired > 120, undefined, { timeout: 90_000 });

    // While it goes on firing, the visitor uses the app.
    const visitor = await context.newPage();
    await visitor.goto(`${server.origin}/sentry-example-page`, { waitUntil: "load" });
    await visitor.waitForFunction(() => "__remixRouter" in window);
    await visitor.getByRole("button", { name: "Throw a client error" }).click();
    await expect.poll(() => visitor.getByTestId("tunnel-answer").textContent(), { timeout: 60_000 }).toBe("The tunnel answered 200.");
    const events = () => payloads<{ message?: string; exception?: { values?: { value?: string }[] } }>(received(ingest.deliveries), "event");
    await eventually(() => events().some((event) => event.exception?.values?.some((value) => value.value === "Self-test: an error thrown in the browser") === true), 60_000);
    await visitor.evaluate(() => {
      const image = document.createElement("img");
      image.src = "https://tracker.invalid/pixel.gif";
      document.body.appendChild(image);
    });
    await eventually(() => ingest.deliveries.some((delivery) => delivery.url.startsWith("/api/4502/security/") && delivery.body.includes("tracker.invalid")), 60_000);
    const fired = await attacker.evaluate(() => window.fired);
    await Promise.all([hostileContext.close(), context.close()]);

    expect(fired).toBeGreaterThan(120);
    // What the other site posted was refused at the door: none of it reached Sentry.
    expect(events().some((event) => event.message === "from another site")).toBe(false);
    // Its frames of the home page were not traced on the visitor's account, and the visitor's own page view was.
    const pageViews = payloads<{ request?: { url?: string } }>(received(ingest.deliveries), "transaction").map((event) => event.request?.url ?? "");
    expect(pageViews.some((url) => url.includes("/sentry-example-page"))).toBe(true);
    expect(pageViews.filter((url) => url.includes("framed-by-another-site"))).toEqual([]);
  });
});
