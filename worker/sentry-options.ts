import type { CloudflareOptions } from "@sentry/cloudflare";
import type { Event } from "@sentry/core";
import { httpServerIntegration } from "@sentry/cloudflare";

import type { AppConfig } from "../app/config.server";
import { RELEASE } from "../app/release.generated";
import { dropNotFoundTransactions, dropThrownRedirects } from "../app/monitoring/filters";
import { madeByAnotherSite } from "./initiator";
import { scrubRequestData } from "./request-data";

/** Who a report is made on behalf of: the request's client, and whether another site's page made it send the request. */
export interface ReportedFor {
  /** The client's `CF-Connecting-IP` (`null` when it sent none). */
  address: string | null;
  byAnotherSite: boolean;
}

/** Whether the Worker may report once more on behalf of a request. */
export interface ReportGate {
  admits(request: ReportedFor, category: "error" | "transaction"): Promise<boolean>;
}

/** The request as the SDK's request wrapper recorded it (`sdkProcessingMetadata.normalizedRequest`). */
interface RecordedRequest {
  headers?: Record<string, string>;
}

/** Who a request's report is for; `undefined` for a report no request caused (a queue's, say). */
function reportedFor(request: RecordedRequest | undefined): ReportedFor | undefined {
  if (!request) return undefined;
  const headers = request.headers ?? {};
  return { address: headers["cf-connecting-ip"] ?? null, byAnotherSite: madeByAnotherSite(headers) };
}

const recordedRequestOf = (event: Event) => (event.sdkProcessingMetadata as { normalizedRequest?: RecordedRequest } | undefined)?.normalizedRequest;

/** The event if the gate admits it (or no request caused it); `null` otherwise. */
async function admitted<T extends Event>(event: T | null, request: ReportedFor | undefined, category: "error" | "transaction", gate: ReportGate | undefined): Promise<T | null> {
  if (!event || !gate || request === undefined) return event;
  return (await gate.admits(request, category)) ? event : null;
}

/**
 * The Worker SDK's settings: the same release, environment and sample rate as the browser's.
 * `gate` decides every event and transaction sent on behalf of a request (`worker/reporting.ts`).
 */
export function workerSentryOptions(config: AppConfig, gate?: ReportGate): CloudflareOptions {
  const { sentry } = config;
  return {
    dsn: sentry.dsn,
    release: RELEASE,
    environment: sentry.environment,
    // Pages are sampled at the Worker's own rate, never the parent's: the SDK compares it with the
    // trace's `sample_rand`, which `ownTrace` has already made the Worker's (decision 009).
    // Nor what another site's page had a visitor's browser load (an `<img>` of a page): it
    // measures nothing of the visitor's, and would cost quota another site chooses (decision 028).
    tracesSampler: ({ normalizedRequest }) => {
      return madeByAnotherSite(normalizedRequest?.headers ?? {}) ? 0 : sentry.tracesSampleRate;
    },
    // Development and tests: the Worker's own envelopes go where the tunnel's go (Spotlight).
    tunnel: sentry.workerEnvelopeUrl,
    // The envelope's own type, as the tunnel sends it: the SDK's transport would post `text/plain`,
    // and Spotlight's UI leaves those out of its Errors and Traces views.
    transportOptions: { headers: { "content-type": "application/x-sentry-envelope" } },
    // No credential leaves the edge in the Worker's own events: page views, errors and the tunnel's bug reports.
    // What no one will see is filtered first, so that it costs the client nothing.
    beforeSend: (event, hint) => {
      const request = reportedFor(recordedRequestOf(event));
      return admitted(dropThrownRedirects(scrubRequestData(event), hint), request, "error", gate);
    },
    beforeSendTransaction: (event) => {
      const request = reportedFor(recordedRequestOf(event));
      return admitted(dropNotFoundTransactions(scrubRequestData(event)), request, "transaction", gate);
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
