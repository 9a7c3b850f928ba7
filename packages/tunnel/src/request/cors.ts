/**
 * CORS for the partner origins in `TUNNEL_ALLOWED_ORIGINS`, and for them only: the app's own origin
 * needs none, and any other origin gets no CORS header at all, so its browser cannot read a thing.
 */

/** The SDK's back-off reads these two from a 429; a cross-origin browser sees them only if exposed. */
const EXPOSED_HEADERS = "Retry-After, X-Sentry-Rate-Limits";

/** The headers for every answer to `origin`, or `undefined` when it is not a partner. */
export function corsHeadersFor(origin: string | null, partners: ReadonlySet<string>): Record<string, string> | undefined {
  if (origin === null || !partners.has(origin)) return undefined;
  return { "access-control-allow-origin": origin, vary: "Origin", "access-control-expose-headers": EXPOSED_HEADERS };
}

/**
 * What a partner's preflight is told. The SDK's POST of `text/plain` needs no preflight, so these
 * cover a partner that sends JSON or a compressed body. Browsers cache the answer for up to 2 hours
 * (Chromium's own cap), so preflights cost the partner's rate limit little.
 */
export const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = {
  "access-control-allow-methods": "POST",
  "access-control-allow-headers": "content-type, content-encoding",
  "access-control-max-age": "7200",
};
