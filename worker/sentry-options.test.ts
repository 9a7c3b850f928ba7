import type { Integration, TransactionEvent } from "@sentry/core";
import { describe, expect, it } from "vitest";

import { readConfig } from "../app/config.server";
import { RELEASE } from "../app/release.generated";
import { workerSentryOptions } from "./sentry-options";

const config = readConfig({
  SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21",
  SENTRY_ENVIRONMENT: "staging",
  SENTRY_TRACES_SAMPLE_RATE: "0.5",
  TUNNEL_UPSTREAM_ORIGIN: "http://127.0.0.1:8969",
});
const options = workerSentryOptions(config);

function sample(path: string, parentSampled?: boolean): number | boolean {
  const sampler = options.tracesSampler!;
  return sampler({
    name: `GET ${path}`,
    attributes: { "url.path": path },
    parentSampled,
    inheritOrSampleWith: (fallback) => (parentSampled === undefined ? fallback : Number(parentSampled)),
  });
}

describe("workerSentryOptions", () => {
  it("reports the same release and environment as the browser", () => {
    expect(options.release).toBe(RELEASE);
    expect(options.environment).toBe("staging");
  });

  it("samples pages at its own rate, whatever a client's trace decided (the SDK compares it with the trace's sample_rand)", () => {
    expect(sample("/")).toBe(0.5);
    expect(sample("/sentry-example-page", true)).toBe(0.5);
    expect(sample("/sentry-example-page", false)).toBe(0.5);
    expect(sample("/monitoring-guide")).toBe(0.5);
  });

  it("sends its own envelopes to the development origin when one is set", () => {
    expect(options.tunnel).toBe("http://127.0.0.1:8969/api/21/envelope/?hsts=0");
    expect(workerSentryOptions(readConfig({ SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21" })).tunnel).toBeUndefined();
  });

  it("filters redirects and not-found transactions as the browser does, and scrubs what it keeps", async () => {
    const redirect = new Response(null, { status: 302 });
    expect(await options.beforeSend!({ type: undefined, message: "redirect" }, { originalException: redirect })).toBeNull();
    expect(await options.beforeSendTransaction!({ type: "transaction", contexts: { trace: { status: "not_found" } } } as TransactionEvent, {})).toBeNull();
    const withSecret = { type: undefined, message: "boom", request: { headers: { authorization: "Basic c2VjcmV0", accept: "text/html" } } };
    expect(await options.beforeSend!(withSecret, {})).toMatchObject({ request: { headers: { accept: "text/html" } } });
    expect(JSON.stringify(withSecret)).not.toContain("c2VjcmV0");
  });

  it("asks the gate for each report made on behalf of a request, after the filters, and for no other", async () => {
    const asked: string[] = [];
    const gated = workerSentryOptions(readConfig({ SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21" }), {
      admits: async ({ address, byAnotherSite }, category) => {
        asked.push(`${category} ${address}${byAnotherSite ? " by another site" : ""}`);
        return address !== "203.0.113.9" && !byAnotherSite;
      },
    });
    const onBehalfOf = (address: string | undefined, fetchMetadata: Record<string, string> = {}) => {
      const headers: Record<string, string> = { ...(address ? { "cf-connecting-ip": address } : {}), ...fetchMetadata };
      return { type: undefined, message: "boom", sdkProcessingMetadata: { normalizedRequest: { headers } } };
    };
    expect(await gated.beforeSend!(onBehalfOf("203.0.113.8"), {})).toMatchObject({ message: "boom" });
    expect(await gated.beforeSend!(onBehalfOf("203.0.113.9"), {})).toBeNull();
    expect(await gated.beforeSend!(onBehalfOf(undefined), {})).toMatchObject({ message: "boom" });
    const image = { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image" };
    expect(await gated.beforeSend!(onBehalfOf("203.0.113.8", image), {})).toBeNull();
    // No request behind it (a queue's event): nobody's share.
    expect(await gated.beforeSend!({ type: undefined, message: "from a queue" }, {})).toMatchObject({ message: "from a queue" });
    // A redirect is filtered before the gate: it costs nothing.
    expect(await gated.beforeSend!(onBehalfOf("203.0.113.8"), { originalException: new Response(null, { status: 302 }) })).toBeNull();
    const transaction = { ...onBehalfOf("203.0.113.9"), type: "transaction" } as TransactionEvent;
    expect(await gated.beforeSendTransaction!(transaction, {})).toBeNull();
    expect(asked).toEqual(["error 203.0.113.8", "error 203.0.113.9", "error null", "error 203.0.113.8 by another site", "transaction 203.0.113.9"]);
  });

  it("samples no page another site's page had the browser load, and a visitor's own navigation from another site at its rate", () => {
    const sampler = options.tracesSampler!;
    const sampled = (headers: Record<string, string>) =>
      sampler({ name: "GET /", attributes: { "url.path": "/" }, normalizedRequest: { headers }, inheritOrSampleWith: (fallback) => fallback });
    expect(sampled({ "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image" })).toBe(0);
    expect(sampled({ "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "iframe" })).toBe(0);
    expect(sampled({ "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" })).toBe(0.5);
    expect(sampled({ "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors", "sec-fetch-dest": "empty" })).toBe(0.5);
  });

  it("does not read request bodies, nor turn console lines into breadcrumbs", () => {
    const integrations = (options.integrations as (defaults: Integration[]) => Integration[])([
      { name: "HttpServer" },
      { name: "Console" },
      { name: "Fetch" },
    ]);
    const httpServer = integrations.find((integration) => integration.name === "HttpServer") as Integration & {
      maxRequestBodySize?: string;
    };
    expect(integrations.map((integration) => integration.name)).toEqual(["Fetch", "HttpServer"]);
    expect(httpServer.maxRequestBodySize).toBe("none");
  });
});
