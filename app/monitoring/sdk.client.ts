/**
 * The browser SDK, as one chunk loaded after hydration or at the first error (`app/entry.client.tsx`):
 * nothing of it is in the eager JavaScript of any page. What the inline stub recorded before it
 * came is captured here with its own stack and time.
 */
import { useLocation, useMatches } from "@remix-run/react";
import { browserTracingIntegration, captureException, captureRemixErrorBoundaryError, getClient, init, lastEventId, logger, withScope, withSentry } from "@sentry/remix";
import { useEffect } from "react";

import { BROWSER_TRACING_TIMEOUTS, browserSentryOptions, type BrowserMonitoringSettings } from "./browser-options";
import type { EarlyErrors } from "./early-errors";
import { offlineObservedTransport } from "./observed-transport.client";

export function startSentry(settings: BrowserMonitoringSettings, earlyErrors: EarlyErrors): void {
  init({
    ...browserSentryOptions(settings, window.location.origin),
    transport: offlineObservedTransport,
    // The pageload span starts at the page's time origin and continues the server's trace from the
    // meta tags, however late this runs; web vitals are read from buffered performance entries.
    integrations: [browserTracingIntegration({ useEffect, useLocation, useMatches, ...BROWSER_TRACING_TIMEOUTS })],
  });
  // Counted as the SDK counts its own buffer's overflow: in the client report it sends when the page is hidden.
  if (earlyErrors.dropped > 0) getClient()?.recordDroppedEvent("queue_overflow", "error", earlyErrors.dropped);
  for (const { error, at, rejection } of earlyErrors.errors) {
    withScope((scope) => {
      scope.addEventProcessor((event) => ({ ...event, timestamp: at }));
      captureException(error, { mechanism: { type: rejection ? "onunhandledrejection" : "onerror", handled: false } });
    });
  }
}

/** Names the pageload after its route and starts a span per navigation: `withSentry`, around nothing. */
export const RouteTracing = withSentry(function RouteTracingHost() {
  return null;
});

export { captureRemixErrorBoundaryError, lastEventId, logger };
