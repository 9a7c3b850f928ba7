import type { TunnelConfig } from "../config.server";
import { tunnelDataPoint } from "./analytics.server";
import { checkEnvelopeDsn } from "./dsn-policy.server";
import { readEnvelopeHead, wholeBody } from "./envelope-head.server";
import { beforeCutoff, Cutoff, forwardEnvelope } from "./forward.server";
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

/** What the tunnel uses besides its configuration; every part is optional. */
export interface TunnelRuntime {
  /** Workers Rate Limiting, keyed by the client's IP. */
  rateLimiter?: Pick<RateLimit, "limit">;
  /** Workers Analytics Engine: one data point per request. */
  analytics?: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  log?: (line: TunnelLogLine) => void;
  /** A bug in the tunnel itself; the client gets a 500 either way. */
  reportError?: (error: unknown) => void;
}

/** The tunnel's bindings, as `wrangler.toml` declares them. */
export function tunnelBindings(env: Pick<Env, "TUNNEL_RATE_LIMITER" | "TUNNEL_ANALYTICS">): TunnelRuntime {
  return { rateLimiter: env.TUNNEL_RATE_LIMITER, analytics: env.TUNNEL_ANALYTICS };
}

/** Handles `POST /monitoring?o=&p=[&r=]`: checks the envelope and streams it, unchanged, to Sentry. */
export async function handleTunnelRequest(
  request: Request,
  config: TunnelConfig,
  { rateLimiter, analytics, log = logToConsole, reportError }: TunnelRuntime = {},
): Promise<Response> {
  const started = Date.now();
  let handled: Handled;
  try {
    handled = await tunnel(request, config, rateLimiter);
  } catch (error) {
    reportError?.(error);
    const reason = "internal_error";
    handled = { response: rejectionResponse(reason), reason, query: undefined, bytes: null, upstreamStatus: null };
  }
  const { response, reason, query } = handled;
  const status = response.status;
  const line: TunnelLogLine = {
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
  };
  log(line);
  try {
    analytics?.writeDataPoint(tunnelDataPoint(line));
  } catch {
    // Metrics are not worth failing an envelope for; the log line above has the same facts.
  }
  return response;
}

function logToConsole(line: TunnelLogLine): void {
  console.log(JSON.stringify(line));
}

/** A limiter that fails lets the envelope through: losing monitoring is worse than a missed limit. */
async function withinRateLimit(rateLimiter: NonNullable<TunnelRuntime["rateLimiter"]>, request: Request): Promise<boolean> {
  try {
    const { success } = await rateLimiter.limit({ key: request.headers.get("cf-connecting-ip") ?? "unknown" });
    return success;
  } catch {
    return true;
  }
}

async function tunnel(
  request: Request,
  config: TunnelConfig,
  rateLimiter: TunnelRuntime["rateLimiter"],
): Promise<Handled> {
  let query: TunnelQuery | undefined;
  let bytes: number | null = null;
  const reject = (reason: RejectionReason, headers?: Record<string, string>): Handled => ({
    response: rejectionResponse(reason, headers),
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

  if (rateLimiter && !(await withinRateLimit(rateLimiter, request))) {
    const period = String(config.rateLimitPeriodSeconds);
    // Sentry's own header: no categories means every category, so the SDK holds back everything.
    return reject("rate_limited", { "retry-after": period, "x-sentry-rate-limits": `${period}::key` });
  }

  const declaredLength = request.headers.get("content-length") ?? "";
  const contentLength = /^\d{1,15}$/.test(declaredLength) ? Number(declaredLength) : undefined;
  bytes = contentLength ?? null;
  if (contentLength !== undefined && contentLength > config.maxEnvelopeBytes) return reject("envelope_too_large");

  const encoding = contentEncodingOf(request.headers);
  if (!encoding) return reject("unsupported_encoding");
  if (!request.body || contentLength === 0) return reject("empty_envelope");

  // One deadline for the whole exchange: receiving the body, and Sentry's answer.
  const cutoff = new Cutoff(config.upstreamTimeoutMs);
  try {

    // workerd hands a body over in 4 KiB chunks, so even a 10 KB event would need the piping below;
    // a small body is cheaper taken whole, in one native call.
    const small = contentLength !== undefined && contentLength <= SMALL_BODY_BYTES;
    const reader = small ? undefined : request.body.getReader();
    let head;
    try {
      head = reader
        ? await beforeCutoff(readEnvelopeHead(reader, encoding), cutoff)
        : await readEnvelopeHead(wholeBody(new Uint8Array(await beforeCutoff(request.arrayBuffer(), cutoff))), encoding);
    } catch {
      reader?.cancel().catch(() => {});
      return reject(cutoff.timedOut ? "body_timeout" : "body_incomplete");
    }
    reader?.releaseLock();
    if (!head.ok) return reject(head.reason);
    bytes = head.head.consumedBytes;
    if (bytes > config.maxEnvelopeBytes) return reject("envelope_too_large");

    const verdict = checkEnvelopeDsn(head.head.dsn, query, config.allowedDsns);
    if (!verdict.ok) return reject(verdict.reason);

    // A body read whole (a small one, or one that ended with its header line) has nothing left to pipe.
    const whole = head.head.ended || head.head.consumedBytes === contentLength;
    const forwarded = await forwardEnvelope({
      url: verdict.allowed.upstreamUrl,
      headers: upstreamRequestHeaders(request.headers, encoding, contentLength),
      consumed: head.head.consumed,
      consumedBytes: head.head.consumedBytes,
      rest: whole ? undefined : request.body,
      contentLength,
      maxBytes: config.maxEnvelopeBytes,
      cutoff,
    });
    bytes = forwarded.bytes;
    if (!forwarded.ok) return reject(forwarded.reason);

    const { answer } = forwarded;
    return {
      response: new Response(answer.body, { status: answer.status, headers: returnedResponseHeaders(answer.headers) }),
      reason: null,
      query,
      bytes,
      upstreamStatus: answer.status,
    };
  } finally {
    cutoff.end();
  }
}
