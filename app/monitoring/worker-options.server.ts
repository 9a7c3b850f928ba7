import type { CloudflareOptions } from "@sentry/cloudflare";
import { httpServerIntegration } from "@sentry/cloudflare";

import type { AppConfig } from "../config.server";
import { RELEASE } from "../release.generated";
import { isTunnelPathSpelling } from "../tunnel";
import { dropNotFoundTransactions, dropThrownRedirects } from "./filters";
import { scrubRequestData } from "./request-data.server";

/** The Worker SDK's settings: the same release, environment and sample rate as the browser's. */
export function workerSentryOptions(config: AppConfig): CloudflareOptions {
  const { sentry } = config;
  return {
    dsn: sentry.dsn,
    release: RELEASE,
    environment: sentry.environment,
    // The tunnel never traces itself: a span per envelope would double every envelope's quota.
    // Pages are sampled at the Worker's own rate, never the parent's: the SDK compares it with the
    // trace's `sample_rand`, which `ownTrace` has already made the Worker's (decision 009).
    tracesSampler: ({ attributes }) => {
      const path = attributes?.["url.path"];
      return typeof path === "string" && isTunnelPathSpelling(path) ? 0 : sentry.tracesSampleRate;
    },
    // Development and tests: the Worker's own envelopes go where the tunnel's go (Spotlight).
    tunnel: sentry.workerEnvelopeUrl,
    // The envelope's own type, as the tunnel sends it: the SDK's transport would post `text/plain`,
    // and Spotlight's UI leaves those out of its Errors and Traces views.
    transportOptions: { headers: { "content-type": "application/x-sentry-envelope" } },
    // No credential leaves the edge in the Worker's own events: page views, errors and the tunnel's bug reports.
    beforeSend: (event, hint) => dropThrownRedirects(scrubRequestData(event), hint),
    beforeSendTransaction: (event) => dropNotFoundTransactions(scrubRequestData(event)),
    integrations: (defaults) => [
      // The tunnel logs a line per envelope outside any request's scope; as console breadcrumbs
      // those lines would pile up in the isolate and ride along with every later server event.
      ...defaults.filter((integration) => integration.name !== "HttpServer" && integration.name !== "Console"),
      // Request bodies stay at the edge: they may hold what a user typed, and reading one to
      // attach it would mean cloning every body.
      httpServerIntegration({ maxRequestBodySize: "none" }),
    ],
  };
}
