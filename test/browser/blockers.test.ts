import { spawn } from "node:child_process";

import { eventually } from "@edge-monitoring/tunnel/testing";
import type { Browser, Page } from "playwright-core";
import { getTunnelPath } from "sentry-core-11";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { loadFilterEngines, type BlockerRequest, type FilterEngines } from "../../scripts/filter-lists";
import { launchChromium, newVisitor } from "../support/chromium";
import { FakeIngest } from "../support/fake-ingest";
import { startTogether } from "../support/start-together";
import { APP_DSN, APP_ROUTE, APP_TUNNEL } from "../support/worker";
import { root } from "../support/workerd";
import { startWranglerDev, type DevServer } from "../support/wrangler-dev";

const ERROR = "Self-test: an error thrown in the browser";

/**
 * uBlock Origin's default lists, as Debian's uBlock Origin package bundles them, in the real
 * engines of uBlock Origin and Ghostery (decision 016). Blockers see URLs, resource types and the
 * page; never bodies.
 */
describe("past the blockers: uBlock Origin's default lists in real filter engines", () => {
  let engines: FilterEngines;
  /** Each server its own, so that what one test's page still sends cannot count in another's. */
  let ingest: FakeIngest;
  let originalIngest: FakeIngest;
  /** The defaults: the route derived from the DSN. */
  let app: DevServer;
  /** An operator who chose the original URL, `/monitoring?o=&p=&r=`. */
  let original: DevServer;
  let browser: Browser;
  beforeAll(async () => {
    [ingest, originalIngest] = await startTogether([FakeIngest.start(), FakeIngest.start()]);
    const vars = (upstream: FakeIngest) => ({ SENTRY_DSN: APP_DSN, SENTRY_ENVIRONMENT: "staging", SENTRY_SELF_TEST: "on", TUNNEL_UPSTREAM_ORIGIN: upstream.origin });
    [engines, app, original, browser] = await startTogether([
      loadFilterEngines(),
      startWranglerDev(vars(ingest)),
      startWranglerDev({ ...vars(originalIngest), TUNNEL_ROUTE: "/monitoring" }),
      launchChromium(),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([app?.stop(), original?.stop()]);
    await Promise.all([ingest?.stop(), originalIngest?.stop()]);
  });
  beforeEach(() => ingest.reset());

  const blockedBy = (request: BlockerRequest) => engines.verdicts(request).filter((verdict) => verdict.blocked);
  const delivered = (text: string, at = ingest) => at.deliveries.some((delivery) => delivery.body.toString("utf8").includes(text));
  const securityReports = (at = ingest) => at.deliveries.filter((delivery) => delivery.url.startsWith("/api/4502/security/"));

  /** The self-test as a visitor uses it: the home page, the self-test, a browser error, and markup the CSP refuses. */
  async function selfTest(page: Page, server: DevServer): Promise<void> {
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    await page.waitForFunction(() => "__remixRouter" in window && document.documentElement.dataset.monitoring === "started");
    await page.getByRole("link", { name: "Self-test" }).click();
    await page.getByRole("heading", { name: "Self-test" }).waitFor();
    await page.getByRole("button", { name: "Throw a client error" }).click();
    await page.getByTestId("self-test-outcome").waitFor();
    await page.evaluate(() => {
      const image = document.createElement("img");
      image.src = "https://tracker.invalid/pixel.gif";
      document.body.appendChild(image);
    });
  }

  /** A visitor whose browser asks the engines about every request, as an extension does, and drops what they block. */
  async function visitorWithBlocker(): Promise<{ page: Page; blocked: string[] }> {
    const page = await newVisitor(browser);
    const blocked: string[] = [];
    await page.context().route("**/*", (route) => {
      const request = route.request();
      const frame = request.frame();
      const candidate = { url: request.url(), pageUrl: frame.url() === "about:blank" ? request.url() : frame.url(), type: request.resourceType() };
      if (blockedBy(candidate).length === 0) return route.continue();
      blocked.push(`${request.method()} ${new URL(request.url()).pathname}${new URL(request.url()).search}`);
      return route.abort("blockedbyclient");
    });
    return { page, blocked };
  }

  it("passes every URL a Chromium session of the self-test used, and blocks the original URL", async () => {
    const page = await newVisitor(browser);
    const used: BlockerRequest[] = [];
    page.on("request", (request) => used.push({ url: request.url(), pageUrl: page.url(), type: request.resourceType() }));
    await selfTest(page, app);
    await eventually(() => delivered(ERROR) && securityReports().length > 0, 15_000);
    // Chromium sends a CSP report from the browser process, outside the page's requests.
    const reportUri = /report-uri (\S+?)(?:;|$)/.exec((await page.evaluate(async () => (await fetch("/")).headers.get("content-security-policy"))) ?? "")![1]!;
    used.push({ url: reportUri, pageUrl: page.url(), type: "cspreport" });
    await page.close();

    const own = used.filter((request) => new URL(request.url).origin === app.origin);
    const paths = own.map((request) => `${request.type} ${new URL(request.url).pathname}${new URL(request.url).search}`);
    // What the page sends monitoring data to, and the SDK it loads, are among them.
    expect(paths).toContain(`fetch ${APP_ROUTE}`);
    expect(paths).toContain(`cspreport ${APP_ROUTE}/csp`);
    expect(paths.some((path) => /^script \/build\/_shared\/sdk\.client-\w+\.js$/.test(path))).toBe(true);
    console.log(`blockers: ${[...new Set(paths)].length} URLs the self-test used, each passed by both engines:\n  ${[...new Set(paths)].join("\n  ")}`);
    const blocked = own.filter((request) => blockedBy(request).length > 0).map((request) => request.url);
    expect(blocked).toEqual([]);
    // Nothing that generic rules key on in what carries monitoring data or loads code: the route,
    // its report path, and every script but the self-test page's own (named as Sentry names it).
    const monitoringAndCode = paths.filter((path) => path.includes(APP_ROUTE) || (path.startsWith("script /build/") && !path.includes("sentry-example-page")));
    expect(monitoringAndCode.length).toBeGreaterThan(5);
    for (const path of monitoringAndCode) {
      expect(path).not.toMatch(/monitoring|sentry|tunnel|telemetry|track|collect|log|metrics|beacon|analytics|events|envelope|[?&][opr]=/);
    }

    const originalUrl = { url: `${app.origin}${APP_TUNNEL}`, pageUrl: `${app.origin}/sentry-example-page`, type: "fetch" };
    expect(blockedBy(originalUrl).map(({ engine, rule, list }) => ({ engine, rule, list }))).toEqual([
      { engine: "uBlock Origin", rule: "/monitoring?o=$xhr", list: "easyprivacy.txt" },
      { engine: "Ghostery", rule: "/monitoring?o=$xmlhttprequest", list: "easyprivacy.txt" },
    ]);
  });

  it("in Chromium behind the engines, the self-test's browser error and a CSP report reach Sentry", async () => {
    const { page, blocked } = await visitorWithBlocker();
    await selfTest(page, app);
    await eventually(() => delivered(ERROR) && securityReports().length > 0, 15_000);
    await expect.poll(() => page.getByTestId("tunnel-answer").textContent()).toBe("The tunnel answered 200.");
    expect(securityReports()[0]!.body.toString("utf8")).toContain("tracker.invalid");
    expect(blocked).toEqual([]);
    await page.close();
  });

  it("in Chromium behind the engines, an envelope sent to the original URL is blocked", async () => {
    const { page, blocked } = await visitorWithBlocker();
    await selfTest(page, original);
    await expect.poll(() => page.getByTestId("tunnel-answer").textContent()).toBe("The tunnel could not be reached.");
    expect(blocked).toContain(`POST ${APP_TUNNEL}`);
    // Waited for: the CSP report, sent after the error, passed; the error never came.
    await eventually(() => securityReports(originalIngest).length > 0, 15_000);
    expect(delivered(ERROR, originalIngest)).toBe(false);
    await page.close();
  });

  it("a tab loaded before the operator changed the route keeps delivering after the deploy", async () => {
    const changing = await FakeIngest.start();
    const vars = { SENTRY_DSN: APP_DSN, SENTRY_ENVIRONMENT: "staging", TUNNEL_UPSTREAM_ORIGIN: changing.origin };
    let server = await startWranglerDev({ ...vars, TUNNEL_ROUTE: "/k7q2x9" });
    try {
      const before = await newVisitor(browser);
      await before.goto(`${server.origin}/sentry-example-page`, { waitUntil: "load" });
      await before.waitForFunction(() => document.documentElement.dataset.monitoring === "started");
      // The deploy: the same origin and state, a new route, the old one retired.
      const deployed = { port: Number(new URL(server.origin).port), stateDir: server.stateDir };
      await server.stop();
      server = await startWranglerDev({ ...vars, TUNNEL_ROUTE: "/m3p8w2", TUNNEL_RETIRED_ROUTES: "/k7q2x9" }, { redeploy: deployed });
      const posted = before.waitForRequest((request) => request.method() === "POST" && (request.postData() ?? "").includes(ERROR));
      await before.getByRole("button", { name: "Throw a client error" }).click();
      expect(new URL((await posted).url()).pathname).toBe("/k7q2x9");
      await eventually(() => delivered(ERROR, changing), 15_000);
      await expect.poll(() => before.getByTestId("tunnel-answer").textContent()).toBe("The tunnel answered 200.");
      const after = await (await fetch(`${server.origin}/`)).text();
      expect(after).toContain('"tunnel":"/m3p8w2"');
      await before.close();
    } finally {
      await server.stop();
      await changing.stop();
    }
  });

  it("npm run check:blockers passes the app's route and names the rule that blocks the original URL", async () => {
    const passed = await checkBlockers(app.origin);
    expect(passed.code).toBe(0);
    expect(passed.output).toMatch(new RegExp(`passes +envelopes +${APP_ROUTE}\\n`));
    expect(passed.output).toMatch(new RegExp(`passes +tunnel: true +${getTunnelPath(APP_DSN)}\\n`));
    expect(passed.output).toMatch(/passes +script +\/build\/_shared\/sdk\.client-\w+\.js/);
    const failed = await checkBlockers(original.origin);
    expect(failed.code).toBe(1);
    expect(failed.output).toContain(`BLOCKED  envelopes    ${APP_TUNNEL}\n             uBlock Origin: /monitoring?o=$xhr (easyprivacy.txt)`);
  });
});

/** The README's command, as an operator runs it; not `spawnSync`, which would stall the servers in this process. */
function checkBlockers(url: string): Promise<{ code: number | null; output: string }> {
  const child = spawn("npm", ["run", "--silent", "check:blockers", "--", "--url", url], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, output })));
}
