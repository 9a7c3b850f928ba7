/**
 * Which headers cross the tunnel, in each direction. Both lists are allow-lists: a header not named
 * here (Cookie, Authorization, Set-Cookie, Strict-Transport-Security, …) never crosses.
 */

/** What Relay uses from the browser: the client's identity for inbound filters and for the event's request data. */
const FORWARDED_CLIENT_HEADERS = ["user-agent", "origin", "referer"];

/** What the browser SDK needs from Sentry's answer: its rate-limit back-off reads the last two. */
const RETURNED_UPSTREAM_HEADERS = ["content-type", "retry-after", "x-sentry-rate-limits"];

/** What DecompressionStream in workerd can read; it has no brotli. */
export type ContentEncoding = "identity" | "gzip" | "deflate";

export function upstreamRequestHeaders(
  client: Headers,
  encoding: ContentEncoding,
  contentLength: number | undefined,
): Headers {
  const headers = new Headers({ "content-type": "application/x-sentry-envelope" });
  if (encoding !== "identity") headers.set("content-encoding", encoding);
  if (contentLength !== undefined) headers.set("content-length", String(contentLength));
  for (const name of FORWARDED_CLIENT_HEADERS) {
    const value = client.get(name);
    if (value !== null) headers.set(name, value);
  }
  for (const [name, value] of client) {
    if (name.startsWith("sec-ch-ua")) headers.set(name, value);
  }
  // Relay takes the event's IP from these; without them every user would appear at the Worker's address.
  const clientIp = client.get("cf-connecting-ip");
  if (clientIp) {
    headers.set("x-forwarded-for", clientIp);
    headers.set("x-sentry-forwarded-for", clientIp);
  }
  return headers;
}

export function returnedResponseHeaders(upstream: Headers): Headers {
  const headers = new Headers();
  for (const name of RETURNED_UPSTREAM_HEADERS) {
    const value = upstream.get(name);
    if (value !== null) headers.set(name, value);
  }
  return headers;
}

/** `undefined` for an encoding the tunnel cannot read the header line through. */
export function contentEncodingOf(headers: Headers): ContentEncoding | undefined {
  const value = (headers.get("content-encoding") ?? "identity").trim().toLowerCase();
  switch (value) {
    case "":
    case "identity":
      return "identity";
    case "gzip":
      return "gzip";
    case "deflate":
      return "deflate";
    default:
      return undefined;
  }
}
