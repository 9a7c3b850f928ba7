import type { Event } from "@sentry/core";

/**
 * Request headers the Worker's own events may carry: what describes the client and the request.
 * An allow-list, because the SDK's own deny-list let `Authorization: Basic …` and `X-Api-Key`
 * through, and a site behind Basic auth would ship its password with every page view.
 */
const ALLOWED_REQUEST_HEADERS = new Set([
  "accept",
  "accept-encoding",
  "accept-language",
  "cache-control",
  "content-length",
  "content-type",
  "host",
  "origin",
  "referer",
  "user-agent",
  "sec-ch-ua",
  "sec-ch-ua-mobile",
  "sec-ch-ua-platform",
  "sec-fetch-dest",
  "sec-fetch-mode",
  "sec-fetch-site",
  "cf-ray",
  "cf-ipcountry",
]);

/** Query parameter names that suggest a secret; their values are replaced. */
const SECRET_NAME = /auth|token|secret|key|passw|pwd|cookie|session|csrf|xsrf|sig|credential|jwt|code/i;

const FILTERED = "[Filtered]";

/** How span data names a request header: `http.request.header.x_api_key`, `…cookie.sid`. */
const SPAN_HEADER_PREFIX = "http.request.header.";
const SPAN_URL_KEYS = new Set(["url", "url.full", "http.url", "http.target"]);
const SPAN_QUERY_KEYS = new Set(["url.query", "http.query"]);

/**
 * `beforeSend` and `beforeSendTransaction` for the Worker: strips every request header not on the
 * allow-list, cookies and bodies, and replaces the values of secret-looking query parameters, in
 * the event's request data, in its spans' data and in its breadcrumbs' URLs.
 */
export function scrubRequestData<E extends Event>(event: E): E {
  const { request } = event;
  if (request) {
    if (request.headers) request.headers = allowedHeaders(request.headers);
    delete request.cookies;
    delete request.data;
    if (request.url) request.url = scrubUrl(request.url);
    if (typeof request.query_string === "string") request.query_string = scrubQuery(request.query_string);
    else delete request.query_string;
  }
  scrubSpanData(event.contexts?.trace?.data);
  for (const span of event.spans ?? []) scrubSpanData(span.data);
  for (const breadcrumb of event.breadcrumbs ?? []) {
    if (typeof breadcrumb.data?.url === "string") breadcrumb.data.url = scrubUrl(breadcrumb.data.url);
  }
  return event;
}

function allowedHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (ALLOWED_REQUEST_HEADERS.has(lower)) kept[lower] = lower === "referer" ? scrubUrl(value) : value;
  }
  return kept;
}

function scrubSpanData(data: Record<string, unknown> | undefined): void {
  if (!data) return;
  for (const [key, value] of Object.entries(data)) {
    if (key.startsWith(SPAN_HEADER_PREFIX)) {
      const header = key.slice(SPAN_HEADER_PREFIX.length).replaceAll("_", "-");
      if (!ALLOWED_REQUEST_HEADERS.has(header)) delete data[key];
    } else if (typeof value === "string" && SPAN_URL_KEYS.has(key)) {
      data[key] = scrubUrl(value);
    } else if (typeof value === "string" && SPAN_QUERY_KEYS.has(key)) {
      data[key] = scrubQuery(value);
    }
  }
}

/** The URL with its query scrubbed, everything else as it was. */
function scrubUrl(url: string): string {
  const start = url.indexOf("?");
  if (start === -1) return url;
  const end = url.indexOf("#", start);
  const query = url.slice(start, end === -1 ? undefined : end);
  return url.slice(0, start) + scrubQuery(query) + (end === -1 ? "" : url.slice(end));
}

/** `a=1&token=x` → `a=1&token=[Filtered]`, with or without a leading `?`. */
function scrubQuery(query: string): string {
  const lead = query.startsWith("?") ? "?" : "";
  const pairs = query.slice(lead.length).split("&");
  return (
    lead +
    pairs
      .map((pair) => {
        const equals = pair.indexOf("=");
        const name = equals === -1 ? pair : pair.slice(0, equals);
        return SECRET_NAME.test(decodeName(name)) ? `${name}=${FILTERED}` : pair;
      })
      .join("&")
  );
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll("+", " "));
  } catch {
    return name;
  }
}
