import { readdirSync } from "node:fs";

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { launchChromium } from "../support/chromium";
import { startTogether } from "../support/start-together";
import { root } from "../support/workerd";
import { startWranglerDev, type DevServer } from "../support/wrangler-dev";

describe("the app in Chromium, served by wrangler dev", () => {
  let server: DevServer;
  let browser: Browser;
  beforeAll(async () => {
    [server, browser] = await startTogether([startWranglerDev({ SENTRY_ENVIRONMENT: "development" }), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function open(path: string): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`${server.origin}${path}`, { waitUntil: "load" });
    return { page, problems };
  }

  it("hydrates the home page and navigates on the client, with no console errors", async () => {
    const { page, problems } = await open("/");
    await expect.poll(() => page.evaluate(() => "__remixRouter" in window)).toBe(true);

    const documentRequests: string[] = [];
    page.on("request", (request) => {
      if (request.resourceType() === "document") documentRequests.push(request.url());
    });
    await page.getByRole("link", { name: "Self-test" }).click();
    await page.getByRole("heading", { name: "Self-test" }).waitFor();

    expect(new URL(page.url()).pathname).toBe("/sentry-example-page");
    expect(documentRequests).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows the not-found page for an unknown path, with a way home", async () => {
    const page = await browser.newPage();
    const response = await page.goto(`${server.origin}/nope`, { waitUntil: "load" });
    expect(response?.status()).toBe(404);
    await page.getByRole("heading", { name: "Page not found" }).waitFor();
    await page.getByRole("link", { name: "Go to the home page" }).click();
    await page.getByRole("heading", { name: "Edge Monitoring Tunnel" }).waitFor();
    await page.close();
  });

  it("can be used from the keyboard alone", async () => {
    const { page, problems } = await open("/");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Self-test");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Self-test" }).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });

  it("never serves the source maps that sit beside the scripts", async () => {
    const page = await browser.newPage();
    const script = readdirSync(`${root}public/build`).find((name) => /^entry\.client-.*\.js$/.test(name))!;
    expect(readdirSync(`${root}public/build`)).toContain(`${script}.map`);
    const served = await page.request.get(`${server.origin}/build/${script}`);
    expect(served.status()).toBe(200);
    const map = await page.request.get(`${server.origin}/build/${script}.map`);
    expect(map.status()).toBe(404);
    expect(await map.text()).not.toContain('"mappings"');
    await page.close();
  });
});
