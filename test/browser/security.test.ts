import { eventually } from "@edge-monitoring/tunnel/testing";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";

import { useIngestDevAndChromium } from "../support/ingest-dev-and-chromium";
import { APP_DSN } from "../support/worker";

declare global {
  interface Window {
    __violations: string[];
  }
}

describe("the pages under their Content-Security-Policy, in Chromium", () => {
  // Not development, whose policy makes room for wrangler's live reload: the nonced policy is proven here.
  const { ingest, server, browser } = useIngestDevAndChromium((ingest) => ({ SENTRY_DSN: APP_DSN, SENTRY_ENVIRONMENT: "staging", TUNNEL_UPSTREAM_ORIGIN: ingest.origin }));

  /** A page that records every CSP violation, as the page itself sees them and as the console says them. */
  async function watched(): Promise<{ page: Page; violations: () => Promise<string[]> }> {
    const page = await browser.newPage();
    const console: string[] = [];
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) console.push(message.text());
    });
    await page.addInitScript(() => {
      window.__violations = [];
      document.addEventListener("securitypolicyviolation", (event) => window.__violations.push(`${event.effectiveDirective} ${event.blockedURI}`));
    });
    const violations = async () => [...console, ...(await page.evaluate(() => window.__violations))];
    return { page, violations };
  }

  it("runs every page and every self-test button without a single violation", async () => {
    const { page, violations } = await watched();
    for (const [path, status] of [["/", 200], ["/no/such/page", 404], ["/sentry-example-page/loader-error", 500]] as const) {
      const response = await page.goto(`${server.origin}${path}`, { waitUntil: "load" });
      expect(response?.status(), path).toBe(status);
      await page.waitForFunction(() => "__remixRouter" in window);
      expect(await violations(), path).toEqual([]);
    }
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    await page.waitForFunction(() => "__remixRouter" in window);
    // A client-side navigation loads the route's chunk from /build/.
    await page.getByRole("link", { name: "Self-test" }).click();
    await page.getByRole("heading", { name: "Self-test" }).waitFor();
    for (const name of ["Throw a client error", "Send a log", "Throw a redirect in the browser", "Throw a redirect on the server", "Trigger a noisy browser error"]) {
      await page.getByRole("button", { name }).click();
      await page.getByTestId("self-test-outcome").waitFor();
    }
    // The SDK's chunk, the tunnel's answers and the server error's full reload, all within the policy.
    await eventually(() => ingest.deliveries.some((delivery) => delivery.url.includes("/envelope/") && delivery.headers["x-sentry-forwarded-for"] !== undefined), 10_000);
    await page.getByRole("button", { name: "Throw a server error" }).click();
    await page.getByRole("heading", { name: "Server error" }).waitFor();
    expect(await violations()).toEqual([]);
    await page.close();
  });

  it("reports a violation through the tunnel to the app's own project's security endpoint", async () => {
    const { page, violations } = await watched();
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    const before = ingest.deliveries.length;
    // Markup an attacker got into the page: an image from elsewhere, which img-src refuses.
    await page.evaluate(() => {
      const image = document.createElement("img");
      image.src = "https://tracker.invalid/pixel.gif";
      document.body.appendChild(image);
    });
    await expect.poll(violations).toContainEqual(expect.stringContaining("img-src https://tracker.invalid/pixel.gif"));
    await eventually(() => ingest.deliveries.slice(before).some((delivery) => delivery.url.startsWith("/api/4502/security/")), 15_000);
    const report = ingest.deliveries.slice(before).find((delivery) => delivery.url.startsWith("/api/4502/security/"))!;
    expect(report.body.toString("utf8")).toContain("tracker.invalid");
    expect(report.url).toContain("sentry_key=0123456789abcdef0123456789abcdef");
    expect(report.url).toContain("sentry_environment=staging");
    await page.close();
  });
});
