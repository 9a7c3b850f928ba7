import { readdirSync } from "node:fs";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { APP_DSN, startWorker, type RunningWorker } from "../support/worker";
import { PLACEHOLDER_DSN } from "../../app/monitoring/local-defaults";
import { root } from "../support/workerd";

describe("the app in workerd", () => {
  let worker: RunningWorker;
  beforeAll(async () => {
    worker = await startWorker({ SENTRY_DSN: APP_DSN, SENTRY_SELF_TEST: "on" });
  });
  afterAll(() => worker.dispose());

  it("renders the home page with the scripts that hydrate it", async () => {
    const response = await worker.fetch("/");
    const html = await response.text();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(html).toContain("<h1>Edge Monitoring Tunnel</h1>");
    expect(html).toMatch(/import\("\/build\/entry\.client-[A-Z0-9]+\.js"\)/);
    expect(html).toContain("window.__remixContext");
  });

  it("shows which Sentry project the monitoring panel reports to, without the DSN's key", async () => {
    const html = await (await worker.fetch("/")).text();
    const panel = /<section class="card" aria-labelledby="monitoring-title">.*?<\/section>/s.exec(html)?.[0];
    expect(panel).toContain("<dd>4502</dd>");
    expect(panel).toContain("<dd>us</dd>");
    expect(panel).toMatch(/<code title="[0-9a-f]{40}">[0-9a-f]{7}<\/code>/);
    expect(panel).not.toContain("0123456789abcdef0123456789abcdef");
    expect(panel).not.toContain("placeholder");
  });

  it("answers an unknown path with a real 404 and a friendly page", async () => {
    const response = await worker.fetch("/no/such/page");
    const html = await response.text();
    expect(response.status).toBe(404);
    expect(html).toContain("Page not found");
    expect(html).toContain('href="/"');
  });

  it("answers a loader that throws with a 500 and the error page", async () => {
    const response = await worker.fetch("/sentry-example-page/loader-error");
    const html = await response.text();
    expect(response.status).toBe(500);
    expect(html).toContain("Something went wrong");
    expect(html).toContain("Go to the home page");
    // Production builds do not show the server's error message to the visitor.
    expect(html).not.toContain("a loader threw on purpose");
  });

  it("serves the built static assets", async () => {
    const client = readdirSync(`${root}public/build`).find((name) => name.startsWith("entry.client-"));
    expect(client).toBeDefined();
    const response = await worker.fetch(`/build/${client}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/javascript/);
    expect(await response.text()).toContain("hydrateRoot");
  });

  it("lets browsers keep the hashed build files for a year, and nothing else", async () => {
    const client = readdirSync(`${root}public/build`).find((name) => name.startsWith("entry.client-"));
    const built = await worker.fetch(`/build/${client}`);
    expect(built.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    // Not hashed, so not immutable: a new favicon must reach browsers.
    const favicon = await worker.fetch("/favicon.svg");
    expect(favicon.headers.get("cache-control")).not.toContain("immutable");
    expect((await worker.fetch("/_headers")).status).toBe(404);
  });
});

describe("configuration", () => {
  it("refuses to start with a bad setting, naming the variable", async () => {
    await expect(startWorker({ TUNNEL_MAX_ENVELOPE_BYTES: "lots" })).rejects.toThrow(/TUNNEL_MAX_ENVELOPE_BYTES/);
  });

  it("says when its DSN is npm start's local placeholder, and links the self-test to Spotlight's Errors view", async () => {
    const worker = await startWorker({ SENTRY_DSN: PLACEHOLDER_DSN, SENTRY_ENVIRONMENT: "development", TUNNEL_UPSTREAM_ORIGIN: "http://localhost:8969" });
    try {
      const home = await (await worker.fetch("/")).text();
      expect(home).toContain('data-testid="placeholder-dsn"');
      expect(home).toContain("This is the local placeholder DSN");
      const selfTest = await (await worker.fetch("/sentry-example-page")).text();
      expect(selfTest).toContain('<a href="http://localhost:8969/telemetry/errors">Spotlight</a>');
    } finally {
      await worker.dispose();
    }
  });

  it("starts without a DSN and says monitoring is not configured", async () => {
    const worker = await startWorker({ SENTRY_DSN: "" });
    try {
      const html = await (await worker.fetch("/")).text();
      expect(html).toContain("Monitoring is not configured");
    } finally {
      await worker.dispose();
    }
  });
});
