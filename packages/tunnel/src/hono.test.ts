import { Hono } from "hono";
import { describe, expect, it } from "vitest";

import { tunnelMiddleware } from "./hono.ts";
import { readTunnelSettings, tunnelUrlFor } from "./settings.ts";
import { createTunnelWorker } from "./worker.ts";

const DSN = "https://0123456789abcdef0123456789abcdef@o1.ingest.us.sentry.io/2";
const APP = "https://app.example.com";
const EVERY_CLIENT = { limit: async () => ({ success: true }) };

/** A Hono app with the tunnel's middleware first and one page of its own; Sentry a stub that keeps what reached it. */
function app() {
  const reached: string[] = [];
  const settings = readTunnelSettings({ SENTRY_DSN: DSN });
  const fetch = (async (url: RequestInfo | URL) => {
    reached.push(String(url));
    return Response.json({ id: "0123456789abcdef0123456789abcdef" });
  }) as typeof globalThis.fetch;
  const tunnel = createTunnelWorker(settings, { TUNNEL_RATE_LIMITER: EVERY_CLIENT }, { fetch, log: () => {} });
  const hono = new Hono();
  hono.use(tunnelMiddleware(tunnel));
  hono.get("/", (context) => context.text("the app's page"));
  hono.all("*", (context) => context.text("the app's own 404", 404));
  return { hono, reached, route: tunnelUrlFor(settings)! };
}

const envelope = `${JSON.stringify({ dsn: DSN })}\n{"type":"event"}\n{}\n`;
const post = (path: string) => new Request(`${APP}${path}`, { method: "POST", body: envelope, headers: { "content-length": String(envelope.length) } });

describe("the tunnel as Hono middleware (@edge-monitoring/tunnel/hono)", () => {
  it("answers the tunnel's route and every spelling of it before any route of the app", async () => {
    const { hono, reached, route } = app();
    expect((await hono.request(post(route))).status).toBe(200);
    expect(reached).toEqual(["https://o1.ingest.us.sentry.io/api/2/envelope/?hsts=0"]);
    const spelled = await hono.request(post(route.toUpperCase()));
    expect(spelled.status).toBe(404);
    expect(((await spelled.json()) as { reason: string }).reason).toBe("not_found");
  });

  it("hands every other request to the app's routes", async () => {
    const { hono, reached } = app();
    expect(await (await hono.request(`${APP}/`)).text()).toBe("the app's page");
    expect(await (await hono.request(post("/elsewhere"))).text()).toBe("the app's own 404");
    expect(reached).toEqual([]);
  });
});
