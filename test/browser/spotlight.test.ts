import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, it } from "vitest";

import { launchChromium } from "../support/chromium";
import { reportWait, WAIT_ENDS_WITHIN_MS } from "../support/developer-waits";
import { startNpmScript, type RunningScript } from "../support/npm-script";
import { startTogether } from "../support/start-together";

/** The README's URLs: the app and Spotlight as `npm start` serves them. */
const APP = "http://localhost:8787";
const SPOTLIGHT = "http://localhost:8969";
/**
 * Every wait here may take up to {@link WAIT_ENDS_WITHIN_MS}: the developer's two (an error listed
 * in a tab open at the press, and in one opened after, mostly Spotlight's own UI starting) are
 * reported against their budgets; Spotlight reloaded or navigated, and the app's own pages, are not.
 */
const WAIT = { timeout: WAIT_ENDS_WITHIN_MS };

/** What a new user does after `npm start`: the self-test, then Spotlight's own UI, in Chromium. */
describe("the local loop: npm start, the self-test, and Spotlight at the README's URLs", () => {
  let started: RunningScript;
  let browser: Browser;
  beforeAll(async () => {
    [started, browser] = await startTogether([startNpmScript(["start"], [`${APP}/`, SPOTLIGHT], { CI: "true" }), launchChromium()]);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await started?.stop();
  });

  it("lists the browser's error in a Spotlight tab open at the press and in one opened after, beside the Worker's errors and one trace of both", { timeout: 240_000 }, async () => {
    // One browser session, as a developer's: Spotlight's own assets are cached after its first visit.
    const session = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const openSpotlight = async () => {
      const ui = await session.newPage();
      const streaming = ui.waitForRequest((request) => new URL(request.url()).pathname === "/stream", WAIT);
      await ui.goto(`${SPOTLIGHT}/telemetry/errors`, { waitUntil: "load" });
      await streaming;
      return ui;
    };
    const openedBefore = await openSpotlight();

    const page = await session.newPage();
    // Pressed once the page has settled, as a person reading it would: its page-load trace sent.
    const settled = page.waitForRequest(
      (request) => request.method() === "POST" && new URL(request.url()).origin === APP && (request.postData() ?? "").includes('"type":"transaction"'),
      WAIT,
    );
    await page.goto(`${APP}/sentry-example-page`, { waitUntil: "load" });
    await settled;
    await page.getByRole("button", { name: "Throw a client error" }).click();
    const pressed = Date.now();
    await openedBefore.getByText("Self-test: an error thrown in the browser").first().waitFor(WAIT);
    reportWait("a browser error listed in an open Spotlight tab", Date.now() - pressed, "the press");

    // A tab opened once the app has answered.
    await page.getByTestId("tunnel-answer").getByText("The tunnel answered 200.").waitFor(WAIT);
    await openedBefore.close();
    const ui = await openSpotlight();
    const loaded = Date.now();
    await ui.getByText("Self-test: an error thrown in the browser").first().waitFor(WAIT);
    reportWait("a browser error listed in a Spotlight tab opened after", Date.now() - loaded, "its load");

    await page.getByRole("button", { name: "Throw a server error" }).click();
    await page.getByTestId("self-test-outcome").getByRole("heading", { name: "Server error" }).waitFor(WAIT);
    await page.waitForFunction(() => "__remixRouter" in window);
    await page.getByRole("link", { name: "Open a page whose loader throws" }).click();
    await page.getByRole("heading", { name: "Something went wrong" }).waitFor(WAIT);
    await ui.reload({ waitUntil: "load" });
    for (const message of ["Self-test: an error thrown in a server action", "Self-test: a loader threw on purpose"]) {
      await ui.getByText(message).first().waitFor(WAIT);
    }

    await ui.goto(`${SPOTLIGHT}/telemetry/traces`, { waitUntil: "load" });
    await ui.getByText("/sentry-example-page").first().click();
    // The Worker's request and, under it, the page load it rendered: one trace.
    await ui.getByText("http.server").first().waitFor(WAIT);
    await ui.getByText("pageload").first().waitFor(WAIT);
    await session.close();
  });
});
