import { Hono } from "hono";
import { describe, expect, it } from "vitest";

import { tunnelMiddleware } from "../src/hono.ts";
import { envelope, EVERY_CLIENT, StubSentry, TEST_DSN } from "../src/testing.ts";
import { createTunnel } from "../src/index.ts";

const APP = "https://app.example.com";

/** A Hono app with the tunnel's middleware first and pages of its own; Sentry the harness's stub. */
function app() {
  const sentry = new StubSentry();
  const tunnel = createTunnel({ dsn: TEST_DSN, limiter: EVERY_CLIENT }, { fetch: sentry.fetch, log: () => {} });
  const hono = new Hono();
  hono.use(tunnelMiddleware(tunnel));
  hono.get("/", (context) => context.text("the app's page"));
  hono.all("*", (context) => context.text("the app's own 404", 404));
  return { hono, reached: () => sentry.took.map((took) => took.url), route: tunnel.pageUrl()! };
}

const post = (path: string) => {
  const { body } = envelope();
  return new Request(`${APP}${path}`, { method: "POST", body, headers: { "content-length": String(body.byteLength) } });
};

describe("the tunnel as Hono middleware (@edge-monitoring/tunnel/hono)", () => {
  it("answers the tunnel's route and every spelling of it before any route of the app", async () => {
    const { hono, reached, route } = app();
    expect((await hono.request(post(route))).status).toBe(200);
    expect(reached()).toEqual(["https://o4501.ingest.us.sentry.io/api/4502/envelope/?hsts=0"]);
    const spelled = await hono.request(post(route.toUpperCase()));
    expect(spelled.status).toBe(404);
    expect(((await spelled.json()) as { reason: string }).reason).toBe("not_found");
  });

  it("hands every other request to the app's routes", async () => {
    const { hono, reached } = app();
    expect(await (await hono.request(`${APP}/`)).text()).toBe("the app's page");
    expect(await (await hono.request(post("/elsewhere"))).text()).toBe("the app's own 404");
    expect(reached()).toEqual([]);
  });
});
