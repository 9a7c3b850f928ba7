import type { init } from "@sentry/remix";

import { dropNotFoundTransactions, dropThrownRedirects, EXTENSION_URLS, NOISY_BROWSER_ERRORS } from "./filters";

type BrowserSentryOptions = NonNullable<Parameters<typeof init>[0]>;

/** What the Worker hands the page (root loader) for `Sentry.init`; every field is safe to expose. */
export interface BrowserMonitoringSettings {
  /** A public DSN: it identifies the project, it grants nothing. */
  dsn: string;
  /** The tunnel's route on the page's own origin, as the Worker serves it (decision 016). */
  tunnel: string;
  release: string;
  environment: string;
  tracesSampleRate: number;
  /** Origins besides the page's own that may receive trace headers. */
  tracePropagationOrigins: readonly string[];
}

/** Passed to `browserTracingIntegration` with Remix's router hooks. */
export const BROWSER_TRACING_TIMEOUTS = {
  // End a pageload or navigation 1 s after its last child span, so short pages report promptly.
  idleTimeout: 1_000,
  // No transaction lives longer than 30 s, however busy the page stays.
  finalTimeout: 30_000,
  // A child span still open after 15 s (a hung request) does not hold its transaction open.
  childSpanTimeout: 15_000,
} as const;

/**
 * The browser SDK's settings: the product's monitoring rules, in one place. Not set, on purpose:
 * the stack-frame limit (the SDK's 50 is kept) and the log flush (the SDK sends buffered logs
 * 5 s after the last one).
 */
export function browserSentryOptions(settings: BrowserMonitoringSettings, pageOrigin: string): BrowserSentryOptions {
  return {
    dsn: settings.dsn,
    // Same-origin, on a path no generic filter rule matches: ad-blockers see no request to sentry.io
    // and nothing that looks like monitoring.
    tunnel: settings.tunnel,
    // The full commit SHA, the same value the Worker reports, so both sides share source maps.
    release: settings.release,
    environment: settings.environment,
    // Enough history to explain an error; more only makes every event heavier.
    maxBreadcrumbs: 100,
    // Envelopes in flight at once; past this the SDK drops and counts them rather than queue without bound.
    transportOptions: { bufferSize: 64 },
    enableLogs: true,
    tracesSampleRate: settings.tracesSampleRate,
    // Anchored patterns: a bare string would match any URL that merely contains the origin.
    tracePropagationTargets: [pageOrigin, ...settings.tracePropagationOrigins].map(originPattern),
    ignoreErrors: NOISY_BROWSER_ERRORS.map(({ pattern }) => pattern),
    denyUrls: [...EXTENSION_URLS],
    beforeSend: dropThrownRedirects,
    beforeSendTransaction: dropNotFoundTransactions,
  };
}

/** Matches URLs on exactly this origin: `https://a.example` but not `https://a.example.evil.test`. */
export function originPattern(origin: string): RegExp {
  const escaped = origin.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  return new RegExp(`^${escaped}(?:[/?#]|$)`);
}
