import { getTraceData } from "@sentry/core";

/**
 * The trace of the request that renders a page, for its meta tags: the page's pageload continues
 * it. Server-only, so that the browser's eager bundle keeps no import of the SDK for it.
 */
export function pageTrace(): { sentryTrace: string | undefined; sentryBaggage: string | undefined } {
  const trace = getTraceData();
  return { sentryTrace: trace["sentry-trace"], sentryBaggage: trace.baggage };
}
