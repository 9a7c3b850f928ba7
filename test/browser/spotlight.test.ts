import { spawn, type ChildProcess } from "node:child_process";

import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, it } from "vitest";

import { launchChromium } from "../support/chromium";
import { eventually } from "../support/fake-ingest";
import { freePort } from "../support/http";
import { startWranglerDev, type DevServer } from "../support/wrangler-dev";
import { root } from "../support/worker";

/** The DSN `npm start` gives the app: of the SaaS shape, reaching nobody but Spotlight. */
const LOCAL_DSN = "https://localdev@o0.ingest.sentry.io/0";
const UI_WAIT = { timeout: 20_000 };

/** What a new user sees after `npm start` and the self-test: Spotlight's own UI, in Chromium. */
describe("the local loop: Spotlight shows the browser's and the Worker's reports together", () => {
  let spotlight: ChildProcess;
  let spotlightOrigin: string;
  let server: DevServer;
  let browser: Browser;
  beforeAll(async () => {
    const port = await freePort();
    spotlightOrigin = `http://127.0.0.1:${port}`;
    spotlight = spawn(`${root}node_modules/.bin/spotlight`, ["server", "--port", String(port)], { stdio: "ignore" });
    await eventually(async () => (await fetch(spotlightOrigin).catch(() => undefined))?.ok === true, 30_000);
    [server, browser] = await Promise.all([
      startWranglerDev({ SENTRY_DSN: LOCAL_DSN, SENTRY_ENVIRONMENT: "development", TUNNEL_UPSTREAM_ORIGIN: spotlightOrigin }),
      launchChromium(),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    spotlight?.kill("SIGTERM");
  });

  it("lists the client error and both server errors, and a trace holds the Worker's request and the browser's pageload", async () => {
    const page = await browser.newPage();
    await page.goto(`${server.origin}/sentry-example-page`, { waitUntil: "load" });
    await page.waitForFunction(() => "__remixRouter" in window);
    await page.getByRole("button", { name: "Throw a client error" }).click();
    await page.getByTestId("tunnel-answer").getByText("The tunnel answered 200.").waitFor(UI_WAIT);
    await page.getByRole("button", { name: "Throw a server error" }).click();
    await page.getByTestId("self-test-outcome").getByRole("heading", { name: "Server error" }).waitFor(UI_WAIT);
    await page.waitForFunction(() => "__remixRouter" in window);
    await page.getByRole("link", { name: "Open a page whose loader throws" }).click();
    await page.getByRole("heading", { name: "Something went wrong" }).waitFor(UI_WAIT);

    const ui = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await ui.goto(`${spotlightOrigin}/telemetry/errors`, { waitUntil: "load" });
    for (const message of [
      "Self-test: an error thrown in the browser",
      "Self-test: an error thrown in a server action",
      "Self-test: a loader threw on purpose",
    ]) {
      await ui.getByText(message).first().waitFor(UI_WAIT);
    }

    await ui.goto(`${spotlightOrigin}/telemetry/traces`, { waitUntil: "load" });
    await ui.getByText("/sentry-example-page").first().click();
    // The Worker's request and, under it, the page load it rendered: one trace.
    await ui.getByText("http.server").first().waitFor(UI_WAIT);
    await ui.getByText("pageload").first().waitFor(UI_WAIT);
    await page.close();
    await ui.close();
  });
});
