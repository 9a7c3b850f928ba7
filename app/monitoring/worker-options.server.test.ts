import { getSpanStatusFromHttpCode, type Integration } from "@sentry/core";
import { describe, expect, it } from "vitest";

import { readConfig } from "../config.server";
import { RELEASE } from "../release.generated";
import { dropNotFoundTransactions, dropThrownRedirects } from "./filters";
import { workerSentryOptions } from "./worker-options.server";

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

  it("never samples a tunnel request, whatever the browser decided", () => {
    expect(sample("/monitoring")).toBe(0);
    expect(sample("/monitoring/", true)).toBe(0);
  });

  it("samples pages at the configured rate, or as the browser's trace decided", () => {
    expect(sample("/")).toBe(0.5);
    expect(sample("/sentry-example-page", true)).toBe(1);
    expect(sample("/monitoring-guide")).toBe(0.5);
  });

  it("sends its own envelopes to the development origin when one is set", () => {
    expect(options.tunnel).toBe("http://127.0.0.1:8969/api/21/envelope/?hsts=0");
    expect(workerSentryOptions(readConfig({ SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21" })).tunnel).toBeUndefined();
  });

  it("filters redirects and not-found transactions as the browser does", () => {
    expect(options.beforeSend).toBe(dropThrownRedirects);
    expect(options.beforeSendTransaction).toBe(dropNotFoundTransactions);
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

describe("span status from HTTP status", () => {
  it.each([
    [200, "ok"],
    [404, "not_found"],
    [429, "resource_exhausted"],
    [500, "internal_error"],
    [503, "unavailable"],
  ])("%i becomes %s", (status, message) => {
    const spanStatus = getSpanStatusFromHttpCode(status);
    expect(spanStatus.message ?? "ok").toBe(message);
  });
});
