import type { CloudflareOptions } from "@sentry/cloudflare";
import type { Event } from "@sentry/core";
import { httpServerIntegration } from "@sentry/cloudflare";

import type { AppConfig } from "../config.server";
import { RELEASE } from "../release.generated";
import { isTunnelPathSpelling } from "@edge-monitoring/tunnel";
import { dropNotFoundTransactions, dropThrownRedirects } from "./filters";
import { scrubRequestData } from "./request-data.server";

/** Whether the client a report is made on behalf of may have the Worker report once more. */
export interface ReportGate {
  /** `address`: the client's `CF-Connecting-IP` (`null` when it sent none). */
  admits(address: string | null, category: "error" | "transaction"): Promise<boolean>;
}

/**
 * The client an event is reported on behalf of: the address of the request the SDK's request
 * wrapper recorded, or `undefined` for an event no request caused (a queue's, say).
 */
function clientOf(event: Event): string | null | undefined {
  const request = (event.sdkProcessingMetadata as { normalizedRequest?: { headers?: Record<string, string> } } | undefined)?.normalizedRequest;
  return request && (request.headers?.["cf-connecting-ip"] ?? null);
}

/** The event if its client is within its share (or no client caused it); `null` otherwise. */
async function withinShare<T extends Event>(event: T | null, client: string | null | undefined, category: "error" | "transaction", gate: ReportGate | undefined): Promise<T | null> {
  if (!event || !gate || client === undefined) return event;
  return (await gate.admits(client, category)) ? event : null;
}

/**
 * The Worker SDK's settings: the same release, environment and sample rate as the browser's.
 * `gate` holds every event and transaction sent on behalf of a request to its client's share.
 */
export function workerSentryOptions(config: AppConfig, gate?: ReportGate): CloudflareOptions {
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
    // What no one will see is filtered first, so that it costs the client nothing.
    beforeSend: (event, hint) => {
      const client = clientOf(event);
      return withinShare(dropThrownRedirects(scrubRequestData(event), hint), client, "error", gate);
    },
    beforeSendTransaction: (event) => {
      const client = clientOf(event);
      return withinShare(dropNotFoundTransactions(scrubRequestData(event)), client, "transaction", gate);
    },
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
