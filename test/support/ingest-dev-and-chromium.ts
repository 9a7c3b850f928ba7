import type { Browser } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

import { launchChromium } from "./chromium";
import { FakeIngest } from "./fake-ingest";
import { startedLater } from "./ingest-and-worker";
import { startTogether } from "./start-together";
import { startWranglerDev, type DevServer } from "./wrangler-dev";

type Vars = Record<string, string>;

/**
 * The browser tests' fixture: a fake ingest, the app in `wrangler dev` with `vars` (which may be
 * worked out from the ingest: its origin, say), and Chromium, started before the enclosing
 * `describe`'s tests and stopped after them. Each is usable inside its tests and hooks.
 */
export function useIngestDevAndChromium(vars: (ingest: FakeIngest) => Vars): { ingest: FakeIngest; server: DevServer; browser: Browser } {
  let ingest: FakeIngest | undefined;
  let server: DevServer | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    ingest = await FakeIngest.start();
    [server, browser] = await startTogether([startWranglerDev(vars(ingest)), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await ingest?.stop();
  });
  return { ingest: startedLater(() => ingest, "the ingest"), server: startedLater(() => server, "wrangler dev"), browser: startedLater(() => browser, "Chromium") };
}
