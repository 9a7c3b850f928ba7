/**
 * The headers of every HTML page, error pages included: a Content-Security-Policy that lets only
 * our own origin's files and this response's nonced inline scripts run, no framing by anyone, and
 * violations reported through the tunnel, to our own origin.
 */
export function pageSecurityHeaders(
  nonce: string,
  securityReportUrl: string | undefined,
  connectOrigins: readonly string[] = [],
  { development = false }: { development?: boolean } = {},
): Record<string, string> {
  const policy = [
    "default-src 'self'",
    // Remix's inline scripts (its context, the module import, scroll restoration) carry the nonce;
    // the rest, Sentry's chunk included, are files under /build/ on our origin. In development,
    // `wrangler dev --live-reload` adds an inline script of its own, which cannot carry the nonce:
    // there inline scripts are allowed, and the nonce left out (a nonce would disable that).
    development ? "script-src 'self' 'unsafe-inline'" : `script-src 'self' 'nonce-${nonce}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    // Envelopes go to the tunnel on our origin, never to Sentry's; other origins only as configured.
    ["connect-src 'self'", ...connectOrigins].join(" "),
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    // `report-uri` alone: with `report-to` beside it Chromium uses only the Reporting API, which
    // batches reports for up to a minute and sent none within that in our tests (decision 009).
    ...(securityReportUrl ? [`report-uri ${securityReportUrl}`] : []),
  ].join("; ");
  return {
    "content-security-policy": policy,
    // For browsers that predate frame-ancestors.
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "strict-origin-when-cross-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=(), browsing-topics=()",
    "cross-origin-opener-policy": "same-origin",
  };
}

/** A fresh nonce for one response: 128 random bits, base64. */
export function newNonce(): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
}
