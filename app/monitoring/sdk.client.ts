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

/** The error events the SDK handed to its transport, newest last: ids that exist at Sentry. */
const sentErrors: { id: string; exception: string }[] = [];
const REMEMBERED_ERRORS = 20;

/** An exception as Sentry's Dedupe tells two apart, in brief: its type and message. */
function exceptionKey(type: string | undefined, value: string | undefined): string {
  return `${type ?? ""}: ${value ?? ""}`;
}

export function startSentry(settings: BrowserMonitoringSettings, earlyErrors: EarlyErrors): void {
  init({
    ...browserSentryOptions(settings, window.location.origin),
    transport: offlineObservedTransport,
    // The pageload span starts at the page's time origin and continues the server's trace from the
    // meta tags, however late this runs; web vitals are read from buffered performance entries.
    integrations: [browserTracingIntegration({ useEffect, useLocation, useMatches, ...BROWSER_TRACING_TIMEOUTS })],
  });
  getClient()?.on("beforeSendEvent", (event) => {
    if (event.type !== undefined || !event.event_id) return;
    const [exception] = event.exception?.values ?? [];
    sentErrors.push({ id: event.event_id, exception: exceptionKey(exception?.type, exception?.value) });
    if (sentErrors.length > REMEMBERED_ERRORS) sentErrors.shift();
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

/** How long an error page waits for the SDK to decide on the event it shows the reference of. */
const REFERENCE_WAIT_MS = 2_000;

/**
 * The reference of an error an error boundary caught: the id of an event Sentry has for it, or
 * `undefined`. The boundary's capture gets an id at once, but the SDK may still drop the event: its
 * Dedupe drops one that repeats the error event before it, as a component that throws while
 * hydrating and again while rendering does. The reference is then that earlier event's, the same
 * error's record, never an id Sentry will not have.
 */
export async function referenceFor(error: unknown): Promise<string | undefined> {
  const id = captureRemixErrorBoundaryError(error);
  await getClient()?.flush(REFERENCE_WAIT_MS);
  if (sentErrors.some((sent) => sent.id === id)) return id;
  if (!(error instanceof Error)) return undefined;
  const key = exceptionKey(error.name, error.message);
  return sentErrors.findLast((sent) => sent.exception === key)?.id;
}

export { lastEventId, logger };
