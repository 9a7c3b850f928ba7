import type { ContentEncoding } from "../request/content-encoding.ts";

/**
 * Which headers cross the tunnel, in each direction. Both lists are allow-lists: a header not named
 * here (Cookie, Authorization, Set-Cookie, Strict-Transport-Security, …) never crosses.
 */

/**
 * What Relay uses from the browser: the client's identity for inbound filters and for the event's
 * request data, the client hints it reads for the device's model and the OS's version among them
 * (the list Sentry's own tunnel forwards, `@sentry/core` 11.12's `tunnelForward`). Client hints by
 * exact name: a prefix would let any `sec-ch-ua-…` header through.
 */
const FORWARDED_CLIENT_HEADERS = [
  "user-agent",
  "origin",
  "referer",
  "sec-ch-ua",
  "sec-ch-ua-model",
  "sec-ch-ua-platform",
  "sec-ch-ua-platform-version",
];

/** What the browser SDK needs from Sentry's answer: its rate-limit back-off reads these. */
const RETURNED_UPSTREAM_HEADERS = ["retry-after", "x-sentry-rate-limits"];

/** Media types of Sentry's answer that are served as they are; any other is served as plain text. */
const INERT_MEDIA_TYPES = new Set(["application/json", "text/plain"]);

/**
 * A plain record rather than a `Headers`: every `Headers` call crosses into the runtime, and this
 * runs once per envelope (the profiler put the `Headers` version at 4 % of the tunnel's CPU).
 */
export function upstreamRequestHeaders(
  client: Headers,
  encoding: ContentEncoding,
  contentLength: number | undefined,
): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/x-sentry-envelope" };
  if (encoding !== "identity") headers["content-encoding"] = encoding;
  if (contentLength !== undefined) headers["content-length"] = String(contentLength);
  // Asked by name: walking every header a browser sends costs five times as much in workerd.
  for (const name of FORWARDED_CLIENT_HEADERS) {
    const value = client.get(name);
    if (value !== null) headers[name] = value;
  }
  // Relay takes the event's IP from these; without them every user would appear at the Worker's address.
  const clientIp = client.get("cf-connecting-ip");
  if (clientIp) {
    headers["x-forwarded-for"] = clientIp;
    headers["x-sentry-forwarded-for"] = clientIp;
  }
  return headers;
}

/**
 * The headers of Sentry's answer as the tunnel serves it from our origin: only what the SDK reads,
 * and, when the body is served with them, a type no browser renders or runs, so that an answer
 * which is not Sentry's own (an HTML error page from a proxy in between, say) stays inert text.
 */
export function returnedResponseHeaders(upstream: Headers, servesBody: boolean): Record<string, string> {
  const headers: Record<string, string> = { ...TUNNEL_RESPONSE_HEADERS };
  const type = servesBody ? upstream.get("content-type") : null;
  if (type !== null) {
    const mediaType = type.split(";", 1)[0]!.trim().toLowerCase();
    headers["content-type"] = INERT_MEDIA_TYPES.has(mediaType) ? type : "text/plain; charset=utf-8";
  }
  for (const name of RETURNED_UPSTREAM_HEADERS) {
    const value = upstream.get(name);
    if (value !== null) headers[name] = value;
  }
  return headers;
}

/**
 * On every answer the tunnel gives, its own or Sentry's: never sniffed, never reused unasked.
 * `no-cache`, not `no-store`: Chromium's network panel leaves a `no-store` answer whose body the
 * page never reads (the SDK reads none) pending for good.
 */
export const TUNNEL_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "cache-control": "no-cache",
};
