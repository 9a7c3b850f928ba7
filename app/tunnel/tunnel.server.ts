import type { TunnelConfig } from "../config.server";
import { checkEnvelopeDsn } from "./dsn-policy.server";
import { readEnvelopeHead, wholeBody } from "./envelope-head.server";
import { forwardEnvelope } from "./forward.server";
import { contentEncodingOf, returnedResponseHeaders, upstreamRequestHeaders } from "./header-policy.server";
import { rejectionResponse, type RejectionReason } from "./rejection.server";
import { parseTunnelQuery, type TunnelQuery } from "./tunnel-query.server";

/** The one log line per request; it never holds the DSN's key, the client's IP or a cookie. */
export interface TunnelLogLine {
  event: "tunnel";
  /** `forwarded`: Sentry answered (whatever its status); `rejected`: refused here; `failed`: Sentry could not be reached. */
  outcome: "forwarded" | "rejected" | "failed";
  reason: RejectionReason | null;
  status: number;
  org: string | null;
  project: string | null;
  region: string | null;
  bytes: number | null;
  upstream_status: number | null;
  duration_ms: number;
}

/** Bodies up to this size (most events) are read whole before the header is looked at. */
const SMALL_BODY_BYTES = 64 * 1024;

interface Handled {
  response: Response;
  reason: RejectionReason | null;
  query: TunnelQuery | undefined;
  bytes: number | null;
  upstreamStatus: number | null;
}

export interface TunnelHooks {
  log?: (line: TunnelLogLine) => void;
  /** A bug in the tunnel itself; the client gets a 500 either way. */
  reportError?: (error: unknown) => void;
}

/** Handles `POST /monitoring?o=&p=[&r=]`: checks the envelope and streams it, unchanged, to Sentry. */
export async function handleTunnelRequest(
  request: Request,
  config: TunnelConfig,
  { log = logToConsole, reportError }: TunnelHooks = {},
): Promise<Response> {
  const started = Date.now();
  let handled: Handled;
  try {
    handled = await tunnel(request, config);
  } catch (error) {
    reportError?.(error);
    const reason = "internal_error";
    handled = { response: rejectionResponse(reason), reason, query: undefined, bytes: null, upstreamStatus: null };
  }
  const { response, reason, query } = handled;
  const status = response.status;
  log({
    event: "tunnel",
    outcome: reason === null ? "forwarded" : status >= 500 ? "failed" : "rejected",
    reason,
    status,
    org: query?.org ?? null,
    project: query?.project ?? null,
    region: query?.region ?? null,
    bytes: handled.bytes,
    upstream_status: handled.upstreamStatus,
    duration_ms: Date.now() - started,
  });
  return response;
}

function logToConsole(line: TunnelLogLine): void {
  console.log(JSON.stringify(line));
}

async function tunnel(request: Request, config: TunnelConfig): Promise<Handled> {
  let query: TunnelQuery | undefined;
  let bytes: number | null = null;
  const reject = (reason: RejectionReason): Handled => ({
    response: rejectionResponse(reason),
    reason,
    query,
    bytes,
    upstreamStatus: null,
  });

  if (request.method !== "POST") return reject("method_not_allowed");

  const url = new URL(request.url);
  query = parseTunnelQuery(url.searchParams);
  if (!query) return reject("invalid_query");

  const origin = request.headers.get("origin");
  if (origin !== null && origin !== url.origin && !config.allowedOrigins.has(origin)) {
    return reject("origin_not_allowed");
  }

  const declaredLength = request.headers.get("content-length") ?? "";
  const contentLength = /^\d{1,15}$/.test(declaredLength) ? Number(declaredLength) : undefined;
  bytes = contentLength ?? null;
  if (contentLength !== undefined && contentLength > config.maxEnvelopeBytes) return reject("envelope_too_large");

  const encoding = contentEncodingOf(request.headers);
  if (!encoding) return reject("unsupported_encoding");
  if (!request.body || contentLength === 0) return reject("empty_envelope");

  // workerd hands a body over in 4 KiB chunks, so even a 10 KB event would need the piping below;
  // a small body is cheaper taken whole, in one native call.
  const small = contentLength !== undefined && contentLength <= SMALL_BODY_BYTES;
  const reader = small ? undefined : request.body.getReader();
  let head;
  try {
    head = await readEnvelopeHead(reader ?? wholeBody(new Uint8Array(await request.arrayBuffer())), encoding);
  } catch {
    return reject("body_incomplete");
  }
  reader?.releaseLock();
  if (!head.ok) return reject(head.reason);
  bytes = head.head.consumedBytes;
  if (bytes > config.maxEnvelopeBytes) return reject("envelope_too_large");

  const verdict = checkEnvelopeDsn(head.head.dsn, query, config.allowedDsns);
  if (!verdict.ok) return reject(verdict.reason);

  // Small bodies often arrive whole with the header line; then there is nothing left to pipe.
  const whole = head.head.ended || head.head.consumedBytes === contentLength;
  const forwarded = await forwardEnvelope({
    url: verdict.allowed.upstreamUrl,
    headers: upstreamRequestHeaders(request.headers, encoding, contentLength),
    consumed: head.head.consumed,
    consumedBytes: head.head.consumedBytes,
    rest: whole ? undefined : request.body,
    contentLength,
    maxBytes: config.maxEnvelopeBytes,
    timeoutMs: config.upstreamTimeoutMs,
  });
  bytes = forwarded.bytes;
  if (!forwarded.ok) return reject(forwarded.reason);

  const upstream = forwarded.response;
  return {
    response: new Response(upstream.body, { status: upstream.status, headers: returnedResponseHeaders(upstream.headers) }),
    reason: null,
    query,
    bytes,
    upstreamStatus: upstream.status,
  };
}
