import { spawn, type ChildProcess } from "node:child_process";

import { eventually } from "@edge-monitoring/tunnel/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { freePort } from "../support/http";
import { APP_TUNNEL, APP_DSN, startWorker, type RunningWorker } from "../support/worker";
import { root } from "../support/workerd";

/** What `npm start` runs: the tunnel and the Worker's own SDK both sending to a real Spotlight. */
describe("with Spotlight as the local Sentry", () => {
  let spotlight: ChildProcess;
  let origin: string;
  let worker: RunningWorker;
  let stream = "";
  const controller = new AbortController();

  beforeAll(async () => {
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    spotlight = spawn(`${root}node_modules/.bin/spotlight`, ["server", "--port", String(port)], { stdio: "ignore" });
    // Spotlight's event stream, once it listens.
    const subscribe = async () => {
      const response = await fetch(`${origin}/stream`, { signal: controller.signal }).catch(() => undefined);
      if (!response?.body) return false;
      void response.body
        .pipeThrough(new TextDecoderStream())
        .pipeTo(new WritableStream({ write: (text) => void (stream += text) }))
        .catch(() => undefined);
      return true;
    };
    await eventually(subscribe, 20_000, { pollMs: 200 });
    worker = await startWorker({ SENTRY_DSN: APP_DSN, SENTRY_ENVIRONMENT: "development", TUNNEL_UPSTREAM_ORIGIN: origin });
  });
  afterAll(async () => {
    controller.abort();
    await worker?.dispose();
    spotlight?.kill("SIGTERM");
  });

  it("shows an envelope posted to /monitoring", async () => {
    const envelope = `${JSON.stringify({ dsn: APP_DSN, event_id: "5907a1c0ffee5907a1c0ffee5907a1c0" })}\n{"type":"event"}\n${JSON.stringify({ event_id: "5907a1c0ffee5907a1c0ffee5907a1c0", message: "seen in Spotlight", level: "error" })}\n`;
    const response = await worker.fetch(APP_TUNNEL, { method: "POST", body: envelope });
    expect(response.status).toBe(200);
    await eventually(() => stream.includes("seen in Spotlight"), 10_000);
  });

  it("shows the Worker's own server errors beside the browser's", async () => {
    const response = await worker.fetch("/sentry-example-page", { method: "POST", body: new URLSearchParams({ intent: "server-error" }) });
    expect(response.status).toBe(500);
    await eventually(() => stream.includes("Self-test: an error thrown in a server action"), 10_000);
    // Spotlight's UI shows only envelopes of their own type; the SDK's transport would say text/plain.
    const event = stream.split("\n\n").find((block) => block.includes("Self-test: an error thrown in a server action"));
    expect(event).toMatch(/^event: application\/x-sentry-envelope$/m);
  });
});
