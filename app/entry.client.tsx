import { RemixBrowser, useLocation, useMatches } from "@remix-run/react";
import { browserTracingIntegration, init } from "@sentry/remix";
import { StrictMode, useEffect } from "react";
import { hydrateRoot } from "react-dom/client";

import { BROWSER_TRACING_TIMEOUTS, browserSentryOptions } from "./monitoring/browser-options";
import { offlineObservedTransport } from "./monitoring/observed-transport.client";
import { readMonitoringSettings } from "./monitoring/settings-script";

// Before hydration, so that errors and the pageload of hydration itself are recorded.
const settings = readMonitoringSettings();
if (settings) {
  init({
    ...browserSentryOptions(settings, window.location.origin),
    transport: offlineObservedTransport,
    integrations: [browserTracingIntegration({ useEffect, useLocation, useMatches, ...BROWSER_TRACING_TIMEOUTS })],
  });
}

// Not inside startTransition: React 18 can then interrupt hydration for a key press, and a Tab
// pressed while the page is still hydrating ended in React error #345 ("Root did not complete").
hydrateRoot(
  document,
  <StrictMode>
    <RemixBrowser />
  </StrictMode>,
);
