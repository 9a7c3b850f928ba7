import { chromium, type Browser, type BrowserContextOptions, type Page } from "playwright-core";

export const CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * As root on this machine: no sandbox (it needs user namespaces), and none of Chromium's own
 * background traffic, which a closed network refuses many times a second.
 */
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: FLAGS });
}

let visitors = 0;

/**
 * A page of a new visitor: its own browser context (storage, offline state), closed with the page
 * as `browser.newPage()`'s is, and its own address at the edge: `CF-Connecting-IP`, which
 * `wrangler dev` passes through to the Worker. The tunnel's per-client limit (60 per 10 s) then
 * counts each test's visitor apart, as it counts real visitors apart; with one shared address, a
 * test's outcome depended on how many envelopes the tests before it had sent in the last 10 s.
 * The header goes with every request of the page, so a request to another origin is preflighted.
 */
export async function newVisitor(browser: Browser, options: BrowserContextOptions = {}): Promise<Page> {
  visitors += 1;
  // 198.18.0.0/15 is reserved for benchmarks: never a real client.
  const address = `198.18.${Math.floor(visitors / 250) % 256}.${(visitors % 250) + 1}`;
  const context = await browser.newContext({ ...options, extraHTTPHeaders: { ...options.extraHTTPHeaders, "cf-connecting-ip": address } });
  const page = await context.newPage();
  // If the browser closes first, it has closed the context with it.
  page.once("close", () => void context.close().catch(() => undefined));
  return page;
}
