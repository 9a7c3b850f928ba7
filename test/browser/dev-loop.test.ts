import { cpSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { eventually } from "@edge-monitoring/tunnel/testing";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { launchChromium } from "../support/chromium";
import { reportWait, WAIT_ENDS_WITHIN_MS } from "../support/developer-waits";
import { startNpmScript, type RunningScript } from "../support/npm-script";
import { startTogether } from "../support/start-together";
import { root } from "../support/workerd";

/** The README's URLs for `npm run dev`: the app, and Spotlight beside it. */
const APP = "http://localhost:8787";
const SPOTLIGHT = "http://localhost:8969";
/** How long the open page sends nothing before the developer's next save. */
const QUIET_MS = 1_500;
/**
 * The developer's checkout: a copy of the project's sources under `.cache/` (which git ignores), so
 * that the route the developer adds never lands in the source tree, even when a run is cut short.
 * Its dependencies resolve from the project's `node_modules`, above it; npm puts its `.bin` first.
 */
const CHECKOUT = join(root, ".cache/dev-loop");
const SOURCES = ["app", "worker", "public", "scripts", "packages/tunnel/package.json", "remix.config.js", "package.json", "wrangler.toml", "tsconfig.json"];
/** A route the developer adds while the loop runs. */
const PROBE = join(CHECKOUT, "app/routes/dev-loop-probe.tsx");

function copyTheCheckout(): void {
  rmSync(CHECKOUT, { recursive: true, force: true });
  const built = [join(root, "public/build"), join(root, "app/release.generated.ts")];
  for (const source of SOURCES) {
    cpSync(join(root, source), join(CHECKOUT, source), { recursive: true, filter: (path) => !built.some((output) => path.startsWith(output)) });
  }
}

/** A route whose loader (server code) and component (browser code) both say which save they are. */
function writeProbe(save: string): void {
  writeFileSync(
    PROBE,
    `import { useLoaderData } from "@remix-run/react";

export const loader = () => ({ server: "${save}" });

export default function DevLoopProbe() {
  const { server } = useLoaderData<typeof loader>();
  return <h1>{\`server ${"${server}"}, page ${save}\`}</h1>;
}
`,
  );
}

type HeadingsShown = Window & { headingsShown?: Record<string, number> };

/**
 * Runs in each document the page loads: notes the wall-clock time at which each heading's text
 * first reached the screen (the first frame rendered with it). That is when the developer sees
 * the save; the test's own polling for the heading notices it up to half a second later.
 */
function recordHeadingsShown(): void {
  const seen: Record<string, number> = {};
  (window as HeadingsShown).headingsShown = seen;
  const note = () => {
    for (const heading of document.querySelectorAll("h1")) {
      const text = heading.textContent ?? "";
      if (text in seen) continue;
      seen[text] = Number.NaN;
      requestAnimationFrame(() => (seen[text] = Date.now()));
    }
  };
  new MutationObserver(note).observe(document, { childList: true, subtree: true, characterData: true });
}

describe("the edit loop: npm run dev at the README's URL", () => {
  let started: RunningScript;
  let browser: Browser;
  beforeAll(async () => {
    copyTheCheckout();
    // No git checkout there: the release is named, as a build outside one must be.
    const dev = startNpmScript(["run", "dev"], [`${APP}/`, SPOTLIGHT], { SENTRY_RELEASE: "dev-loop" }, CHECKOUT);
    [started, browser] = await startTogether([dev, launchChromium()]);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await started?.stop();
    rmSync(CHECKOUT, { recursive: true, force: true });
  });

  // Each wait may take up to WAIT_ENDS_WITHIN_MS; the settling between saves up to 15 s each.
  it("serves a new route, then shows each save of its server and page code in the open page", { timeout: 180_000 }, async () => {
    writeProbe("first");
    await eventually(async () => {
      // The whole answer within 2 s, or not yet: a body still arriving when the time runs out (the
      // dev server on a busy machine) is a try that failed, not the test's error.
      const text = await fetch(`${APP}/dev-loop-probe`, { signal: AbortSignal.timeout(2_000) })
        .then((answer) => (answer.ok ? answer.text() : ""))
        .catch(() => "");
      return text.includes("server first, page first");
    }, WAIT_ENDS_WITHIN_MS, { pollMs: 100 });

    const page = await browser.newPage();
    await page.addInitScript(recordHeadingsShown);
    let inFlight = 0;
    let lastRequestAt = Date.now();
    page.on("request", () => ((inFlight += 1), (lastRequestAt = Date.now())));
    const ended = () => ((inFlight -= 1), (lastRequestAt = Date.now()));
    page.on("requestfinished", ended);
    page.on("requestfailed", ended);
    await page.goto(`${APP}/dev-loop-probe`, { waitUntil: "load" });
    // The open page as a developer has it before the next save: hydrated, its SDK (which loads
    // after the page) started, and done sending what a page load sends (the page-load transaction
    // goes a second after the page is idle). Saving sooner timed the page's own loading with the
    // reload: the first save after a load took 0.3 to 0.6 s longer than the next.
    const settled = async () => {
      await page.waitForFunction(() => "__remixRouter" in window && document.documentElement.dataset.monitoring === "started");
      await eventually(() => inFlight === 0 && Date.now() - lastRequestAt >= QUIET_MS, 15_000, { pollMs: 100 });
    };
    await settled();

    for (const save of ["second", "third"]) {
      writeProbe(save);
      const saved = Date.now();
      const heading = `server ${save}, page ${save}`;
      // Nothing here navigates: the page reloads itself.
      await page.getByRole("heading", { name: heading }).waitFor({ timeout: WAIT_ENDS_WITHIN_MS });
      const shown = await page.evaluate((text) => (window as HeadingsShown).headingsShown?.[text], heading);
      expect(shown).toBeGreaterThanOrEqual(saved);
      reportWait("a save shown in the open page", shown! - saved, `saving "${save}"`);
      await settled();
    }
    await page.close();
  });
});
