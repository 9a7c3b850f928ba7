import type { Event, EventHint } from "@sentry/core";

/**
 * Browser errors that say nothing about this app's code, each with the reason it is noise.
 * Sentry matches each pattern against the error's "Type: message" and its bare message.
 */
export const NOISY_BROWSER_ERRORS: readonly { pattern: RegExp; reason: string }[] = [
  {
    pattern: /^ResizeObserver loop (limit exceeded|completed with undelivered notifications)/,
    reason: "the browser reports a layout that took two frames; nothing failed",
  },
  {
    pattern: /^Script error\.?$/,
    reason: "a cross-origin script failed and the browser hides everything about it",
  },
  {
    pattern: /^Non-Error promise rejection captured/,
    reason: "something rejected with a non-Error (extensions, third-party widgets); there is no stack to act on",
  },
  { pattern: /^(TypeError: )?Failed to fetch$/, reason: "the network failed under a fetch (Chromium's wording)" },
  { pattern: /^(TypeError: )?Load failed$/, reason: "the network failed under a fetch (Safari's wording)" },
  {
    pattern: /^(TypeError: )?NetworkError when attempting to fetch resource\.$/,
    reason: "the network failed under a fetch (Firefox's wording)",
  },
  { pattern: /^AbortError\b/, reason: "a request was cancelled on purpose, usually by navigating away" },
];

/** Errors thrown from browser extensions' own code, which runs in our page but is not ours. */
export const EXTENSION_URLS: readonly RegExp[] = [
  /^chrome-extension:\/\//,
  /^moz-extension:\/\//,
  /^safari-(web-)?extension:\/\//,
];

/** Remix's catch-all route: a transaction named after it is a page that does not exist. */
const NOT_FOUND_ROUTE_ID = "routes/$";

function statusOf(thrown: unknown): number | undefined {
  if (typeof thrown !== "object" || thrown === null || !("status" in thrown)) return undefined;
  const { status } = thrown as { status: unknown };
  return typeof status === "number" ? status : undefined;
}

/** A Remix `redirect()` thrown as a 3xx Response: control flow, not a failure. */
export function isThrownRedirect(hint: EventHint | undefined): boolean {
  const status = statusOf(hint?.originalException);
  return status !== undefined && status >= 300 && status < 400;
}

/** `beforeSend` for the browser and the Worker: redirects are never reported. */
export function dropThrownRedirects<E extends Event>(event: E, hint: EventHint): E | null {
  return isThrownRedirect(hint) ? null : event;
}

/**
 * A transaction for a page that does not exist: the server's request answered 404, or the browser
 * rendered the catch-all route (pageload and navigation alike). Bots probing for paths would
 * otherwise fill the performance data.
 */
export function isNotFoundTransaction(event: Event): boolean {
  const trace = event.contexts?.trace;
  return (
    trace?.data?.["http.response.status_code"] === 404 ||
    trace?.status === "not_found" ||
    event.transaction === NOT_FOUND_ROUTE_ID
  );
}

/** `beforeSendTransaction` for the browser and the Worker. */
export function dropNotFoundTransactions<E extends Event>(event: E): E | null {
  return isNotFoundTransaction(event) ? null : event;
}
