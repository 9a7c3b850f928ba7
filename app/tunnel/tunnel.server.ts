import { tunnelDataPoint } from "./analytics.server";
import { createClientLimiter } from "./client-limiter.server";
import { discardedCategories, type ClientReports } from "./client-reports.server";
import { corsHeadersFor, PREFLIGHT_HEADERS } from "./cors.server";
import { Deadline, earlyEnd, type EarlyEnd } from "./deadline.server";
import type { Dsn } from "./dsn.server";
import { allowedQueries, checkEnvelopeDsn, compileAllowList } from "./dsn-policy.server";
import {
  joinChunks,
  readEnvelopeHead,
  wholeBody,
  type BodyChunk,
  type EnvelopeHead,
  type HeadResult,
} from "./envelope-head.server";
import { envelopeItemTypes } from "./envelope-items.server";
import { forwardEnvelope, forwardWhole, type ForwardFailure } from "./forward.server";
import {
  contentEncodingOf,
  isUnrecognisedCoding,
  returnedResponseHeaders,
  TUNNEL_RESPONSE_HEADERS,
  upstreamRequestHeaders,
  type ContentEncoding,
} from "./header-policy.server";
import { readSecurityReport, securityEndpointFor, type OwnProject } from "./security-report.server";
import { SentryLimits } from "./sentry-limits.server";
import { createSpoolBudget, SPOOL_BUDGET_PERIOD_SECONDS, type SpoolBudget } from "./spool-budget.server";
import { createSpool, type Spool, type SpoolBody, type SpooledEnvelope } from "./spool.server";
import type { SpoolStats } from "./spool-stats.server";
import { TUNNEL_ANSWERS, tunnelAnswer, type TunnelAnswerCode } from "./tunnel-answers.server";
import { SECURITY_REPORT_PATH, TUNNEL_PATH } from "./tunnel-path";
import { parseTunnelQuery, type TunnelQuery } from "./tunnel-query.server";
import { UpstreamBreaker } from "./upstream-breaker.server";
import { projectOf, type ProjectIdentity } from "./upstream-target.server";

/** The tunnel's settings, as `app/config.server.ts` reads them from the Worker's variables. */
export interface TunnelSettings {
  /** DSNs whose envelopes are forwarded, each to its own ingest. */
  allowedDsns: readonly Dsn[];
  /** Partner origins allowed besides the request's own; they also get CORS. */
  allowedOrigins: readonly string[];
  maxEnvelopeBytes: number;
  /** From a request's arrival to the tunnel's answer, whatever the request or Sentry does. */
  timeoutMs: number;
  /** Development and tests only: replaces scheme, host and port of every upstream URL. */
  upstreamOrigin: string | undefined;
  /** The rate limiter's period: how long a limited client is told to wait. */
  rateLimitPeriodSeconds: number;
  /** The spool's first retry delay; each further attempt waits twice as long, up to an hour. */
  spoolRetrySeconds: number;
  /**
   * The app's own project: `POST /monitoring/security-report` sends CSP reports there (without it,
   * that path is not served), and the spool counts there what it drops of DSNs no longer allowed.
   */
  ownProject: OwnProject | undefined;
}

/** What the tunnel uses besides its settings; every part is optional. */
export interface TunnelRuntime {
  /** Workers Rate Limiting, keyed by the client's address; a client it refused is refused without asking again until its window ends. */
  rateLimiter?: Pick<RateLimit, "limit">;
  /** Workers Analytics Engine: one data point per request. */
  analytics?: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  log?: (line: TunnelLogLine) => void;
  /** A bug in the tunnel itself; the client gets a 500 either way. */
  reportError?: (error: unknown, request: Request) => void;
  /** Where envelopes go that Sentry cannot take now; without it they fail as Sentry did. */
  spool?: Spool;
  /** Sentry's rate limits as last heard; share one with the spool's consumer. */
  limits?: SentryLimits;
  /** Counts what is stored; share one with the spool's consumer. */
  spoolStats?: SpoolStats;
  /** Byte budgets for what a client, and everyone, may store; without it, only the request limit bounds the spool. */
  spoolBudget?: SpoolBudget;
  /** Counts, for Sentry, what the edge drops on its own account; share one with the spool's consumer. */
  reports?: ClientReports;
}

/** The tunnel's bindings, as `wrangler.toml` declares them; the spool's are optional. */
export function tunnelBindings(
  env: Pick<Env, "TUNNEL_RATE_LIMITER" | "TUNNEL_ANALYTICS"> &
    Partial<Pick<Env, "TUNNEL_SPOOL" | "TUNNEL_SPOOL_BUCKET" | "TUNNEL_SPOOL_CLIENT_BUDGET" | "TUNNEL_SPOOL_TOTAL_BUDGET">>,
): TunnelRuntime {
  const queue = env.TUNNEL_SPOOL as Queue<SpooledEnvelope> | undefined;
  return {
    rateLimiter: env.TUNNEL_RATE_LIMITER,
    analytics: env.TUNNEL_ANALYTICS,
    spool: queue ? createSpool({ queue, bucket: env.TUNNEL_SPOOL_BUCKET }) : undefined,
    spoolBudget: createSpoolBudget(env.TUNNEL_SPOOL_CLIENT_BUDGET, env.TUNNEL_SPOOL_TOTAL_BUDGET),
  };
}

type TunnelOutcome = "forwarded" | "preflight" | (typeof TUNNEL_ANSWERS)[TunnelAnswerCode][1];

/** Sentry's answers that mean "not now" rather than "no": the envelope is spooled. */
export const UNAVAILABLE_STATUSES: ReadonlySet<number> = new Set([500, 502, 503, 504]);
const UNAVAILABLE_FAILURES: ReadonlySet<ForwardFailure> = new Set(["upstream_unreachable", "upstream_timeout"]);

/** The one log line per request; it never holds the DSN's key, the client's IP or a cookie. */
export interface TunnelLogLine {
  event: "tunnel";
  /** What was posted: an envelope to `/monitoring`, or a CSP report to `/monitoring/security-report`. */
  kind: "envelope" | "security_report";
  /** `forwarded`: Sentry answered (whatever its status); `spooled`: stored for later; `rejected`: refused here; `failed`: Sentry could not be reached and nothing was stored, or a bug. */
  outcome: TunnelOutcome;
  reason: TunnelAnswerCode | null;
  status: number;
  org: string | null;
  project: string | null;
  region: string | null;
  bytes: number | null;
  upstream_status: number | null;
  duration_ms: number;
}

/** Answers one request to the tunnel; never rejects. */
export type Tunnel = (request: Request) => Promise<Response>;

/** Failures of reading a body that are the client's going away, whatever the body held. */
const CLIENT_FAULTS: ReadonlySet<string> = new Set(["body_timeout", "body_incomplete"]);

/** Bodies up to this size (most events) are read whole before the header is looked at. */
const SMALL_BODY_BYTES = 64 * 1024;

/** What one request came to, and the facts its log line needs. */
interface Handled {
  response: Response;
  code: TunnelAnswerCode | null;
  outcome: TunnelOutcome;
}

/** An envelope that passed every check, and what its delivery needs. */
interface Checked {
  /** The request's body, its head already read into `head.consumed`. */
  body: ReadableStream<BodyChunk>;
  head: EnvelopeHead;
  encoding: ContentEncoding;
  contentLength: number | undefined;
  upstreamUrl: string;
}

/** Facts about a request, learnt as it passes each check. */
interface Facts {
  /** When the request arrived, in ms since the epoch. */
  receivedAt: number;
  kind: TunnelLogLine["kind"];
  query: TunnelQuery | undefined;
  bytes: number | null;
  upstreamStatus: number | null;
}

/**
 * Builds the tunnel: `POST /monitoring?o=&p=[&r=]` checks the envelope's header line and streams
 * the body, unchanged, to the DSN's Sentry ingest. The Worker entry, the Remix route and the tests
 * all go through a tunnel made here.
 */
export function createTunnel(settings: TunnelSettings, runtime: TunnelRuntime = {}): Tunnel {
  const allowList = compileAllowList(settings.allowedDsns, settings.upstreamOrigin);
  const partners: ReadonlySet<string> = new Set(settings.allowedOrigins);
  const { rateLimiter, analytics, log = logToConsole, reportError, spool, limits = new SentryLimits(), spoolStats, spoolBudget, reports } = runtime;
  const clientAllowed = rateLimiter && createClientLimiter(rateLimiter, settings.rateLimitPeriodSeconds);
  const namesAllowedProject = allowedQueries(allowList);
  const breakers = new Map([...allowList.values()].map(({ upstreamUrl }) => [upstreamUrl, new UpstreamBreaker()]));
  const period = String(settings.rateLimitPeriodSeconds);
  // Sentry's own header: no categories means every category, so the SDK holds back everything.
  const limitedHeaders = { "retry-after": period, "x-sentry-rate-limits": `${period}::key` };
  const allowHeader = { allow: partners.size > 0 ? "POST, OPTIONS" : "POST" };
  const securityTarget = settings.ownProject && securityReportTarget(settings.ownProject, settings.upstreamOrigin);

  const refuse = (code: TunnelAnswerCode, headers?: Record<string, string>): Handled => ({
    response: tunnelAnswer(code, headers),
    code,
    outcome: TUNNEL_ANSWERS[code][1],
  });

  /** Every check that needs no body, cheapest and most telling first; the limiter sees every request. */
  async function admit(request: Request, facts: Facts): Promise<Handled | TunnelQuery> {
    if (clientAllowed && !(await clientAllowed(request.headers.get("cf-connecting-ip")))) return refuse("rate_limited", limitedHeaders);
    const url = new URL(request.url);
    if (url.pathname === SECURITY_REPORT_PATH && securityTarget) facts.kind = "security_report";
    else if (url.pathname !== TUNNEL_PATH) return refuse("not_found");

    const origin = request.headers.get("origin");
    const partner = origin !== null && partners.has(origin);
    if (origin !== null && !partner && origin !== url.origin) return refuse("origin_not_allowed");
    if (request.method === "OPTIONS" && partner) {
      const response = new Response(null, { status: 204, headers: { ...TUNNEL_RESPONSE_HEADERS, ...PREFLIGHT_HEADERS } });
      return { response, code: null, outcome: "preflight" };
    }
    if (request.method !== "POST") return refuse("method_not_allowed", allowHeader);
    if (facts.kind === "security_report") return securityTarget!.project;

    const query = parseTunnelQuery(url.searchParams);
    if (!query) return refuse("invalid_query");
    return namesAllowedProject(query) ? query : refuse("query_not_allowed");
  }

  async function relay(request: Request, deadline: Deadline, facts: Facts): Promise<Handled> {
    const admitted = await admit(request, facts);
    if ("response" in admitted) return admitted;
    facts.query = admitted;
    if (facts.kind === "security_report") return relayReport(request, deadline, facts);

    const declaredLength = request.headers.get("content-length") ?? "";
    const contentLength = /^\d{1,15}$/.test(declaredLength) ? Number(declaredLength) : undefined;
    facts.bytes = contentLength ?? null;
    if (contentLength !== undefined && contentLength > settings.maxEnvelopeBytes) return refuse("envelope_too_large");
    // A coding that is no coding is read as none, as Relay does, if the header line then reads.
    const declared = contentEncodingOf(request.headers);
    const assumedIdentity = declared === undefined && isUnrecognisedCoding(request.headers);
    const encoding = declared ?? (assumedIdentity ? "identity" : undefined);
    if (!encoding) return refuse("unsupported_encoding");
    if (!request.body || contentLength === 0) return refuse("empty_envelope");

    const read = await readHead(request, request.body, contentLength, encoding, deadline);
    if (!read.ok) return refuse(assumedIdentity && !CLIENT_FAULTS.has(read.reason) ? "unsupported_encoding" : read.reason);
    const { head } = read;
    facts.bytes = head.consumedBytes;
    if (head.consumedBytes > settings.maxEnvelopeBytes) return refuse("envelope_too_large");

    const verdict = checkEnvelopeDsn(head.dsn, allowList);
    if (!verdict.ok) return refuse(verdict.reason);
    // Logged as the project it goes to, which may not be the one the query named.
    facts.query = queryOf(verdict.allowed);
    const checked = { body: request.body, head, encoding, contentLength, upstreamUrl: verdict.allowed.upstreamUrl };
    return deliver(request.headers, checked, deadline, facts);
  }

  /**
   * Sends an envelope that passed every check to Sentry, or to the spool when Sentry cannot take
   * it: straight there while the breaker is open, or after Sentry failed a body read whole.
   */
  async function deliver(clientHeaders: Headers, envelope: Checked, deadline: Deadline, facts: Facts): Promise<Handled> {
    const { body, head, encoding, contentLength, upstreamUrl } = envelope;
    // A body read whole (a small one, or one that ended with its header line) has nothing left to pipe.
    const whole = head.ended || head.consumedBytes === contentLength ? joinChunks(head.consumed, head.consumedBytes) : undefined;
    const plain = whole && encoding === "identity" ? whole : undefined;
    const sentrySaidNo = limits.refusal(head.dsn, () => plain && envelopeItemTypes(plain));
    if (sentrySaidNo) {
      reports?.count(head.dsn, "ratelimit_backoff", discardedCategories(plain));
      return refuse("sentry_rate_limited", sentrySaidNo);
    }

    const headers = upstreamRequestHeaders(clientHeaders, encoding, contentLength);
    const stored: Omit<SpooledEnvelope, "body" | "key"> = { url: upstreamUrl, headers, dsn: head.dsn, receivedAt: facts.receivedAt };
    /** Stores the envelope within the budgets: the answer to give, or `undefined` when it could not be stored. */
    const toSpool = async (body: SpoolBody): Promise<Handled | undefined> => {
      if (!spool) return undefined;
      const length = body instanceof Uint8Array ? body.byteLength : body.length;
      if (spoolBudget && !(await spoolBudget(clientHeaders.get("cf-connecting-ip"), length))) {
        reports?.count(head.dsn, "queue_overflow", discardedCategories(plain));
        return refuse("spool_full", { "retry-after": String(SPOOL_BUDGET_PERIOD_SECONDS) });
      }
      if (!(await spool.store(stored, body))) return undefined;
      if (spoolStats) spoolStats.stored += 1;
      return refuse("spooled");
    };

    const breaker = breakers.get(upstreamUrl)!;
    if (spool && !breaker.allows()) {
      // Sentry is down: straight to the spool, without waiting on it. What cannot be stored (a body
      // of unknown length, which R2 cannot take; a large one without a bucket) still tries Sentry.
      if (whole) {
        const spooled = await toSpool(whole);
        if (spooled) return spooled;
      } else if (contentLength !== undefined && spool.accepts(stored, contentLength)) {
        const stream = prefixed(head.consumed, body, contentLength);
        const spooled = await deadline.race(toSpool({ stream, length: contentLength })).catch(() => refuse(earlyEnd("receiving", deadline)));
        // The body went into the failed store: there is nothing left to send Sentry.
        return spooled ?? refuse("spool_unavailable");
      }
    }

    const forwarded = await forwardEnvelope({
      url: upstreamUrl,
      headers,
      consumed: whole ? [whole] : head.consumed,
      consumedBytes: head.consumedBytes,
      rest: whole ? undefined : body,
      contentLength,
      maxBytes: settings.maxEnvelopeBytes,
      deadline,
    });
    facts.bytes = forwarded.bytes;
    if (!forwarded.ok) {
      if (!UNAVAILABLE_FAILURES.has(forwarded.reason)) return refuse(forwarded.reason);
      breaker.failed();
      return (whole && (await toSpool(whole))) || refuse(forwarded.reason);
    }

    const { answer } = forwarded;
    facts.upstreamStatus = answer.status;
    limits.record(head.dsn, answer.status, answer.headers);
    if (UNAVAILABLE_STATUSES.has(answer.status)) {
      breaker.failed();
      const spooled = whole && (await toSpool(whole));
      if (spooled) return spooled;
    } else {
      breaker.succeeded();
    }
    const response = new Response(answer.body, { status: answer.status, headers: returnedResponseHeaders(answer.headers) });
    return { response, code: null, outcome: "forwarded" };
  }

  /**
   * A CSP report, to the app's own project's security endpoint: the destination is the Worker's,
   * never the client's, and the report is bounded, checked and sent as it came. Not spooled: a
   * browser sends a report once, and one lost while Sentry is down costs less than storing junk.
   */
  async function relayReport(request: Request, deadline: Deadline, facts: Facts): Promise<Handled> {
    const read = await readSecurityReport(request, deadline);
    if (!read.ok) return refuse(read.reason);
    facts.bytes = read.body.byteLength;
    const headers = { ...upstreamRequestHeaders(request.headers, "identity", undefined), "content-type": read.mediaType };
    const forwarded = await forwardWhole({ url: securityTarget!.url, headers, body: read.body, deadline });
    if (!forwarded.ok) return refuse(forwarded.reason);
    const { answer } = forwarded;
    facts.upstreamStatus = answer.status;
    const response = new Response(answer.body, { status: answer.status, headers: returnedResponseHeaders(answer.headers) });
    return { response, code: null, outcome: "forwarded" };
  }

  function record(handled: Handled, facts: Facts): void {
    const { query } = facts;
    const line: TunnelLogLine = {
      event: "tunnel",
      kind: facts.kind,
      outcome: handled.outcome,
      reason: handled.code,
      status: handled.response.status,
      org: query?.org ?? null,
      project: query?.project ?? null,
      region: query?.region ?? null,
      bytes: facts.bytes,
      upstream_status: facts.upstreamStatus,
      duration_ms: Date.now() - facts.receivedAt,
    };
    log(line);
    try {
      analytics?.writeDataPoint(tunnelDataPoint(line));
    } catch {
      // Metrics are not worth failing an envelope for; the log line above has the same facts.
    }
  }

  return async (request) => {
    const deadline = new Deadline(settings.timeoutMs);
    const facts: Facts = { receivedAt: Date.now(), kind: "envelope", query: undefined, bytes: null, upstreamStatus: null };
    let handled: Handled;
    try {
      handled = await relay(request, deadline, facts);
    } catch (error) {
      reportError?.(error, request);
      handled = refuse("internal_error");
    } finally {
      deadline.end();
    }
    const cors = corsHeadersFor(request.headers.get("origin"), partners);
    if (cors) for (const [name, value] of Object.entries(cors)) handled.response.headers.set(name, value);
    record(handled, facts);
    return handled.response;
  };
}

/** Where CSP reports go, and the project their log lines name, worked out once. */
function securityReportTarget(own: OwnProject, upstreamOrigin: string | undefined): { url: string; project: TunnelQuery } {
  return { url: securityEndpointFor(own, upstreamOrigin), project: queryOf(projectOf(own.dsn)) };
}

/** A project as the tunnel's query names it, for the log line. */
function queryOf({ org, region, projectId }: ProjectIdentity): TunnelQuery {
  return { org, region, project: projectId };
}

function logToConsole(line: TunnelLogLine): void {
  console.log(JSON.stringify(line));
}

type HeadRead = HeadResult | { ok: false; reason: EarlyEnd };

/**
 * Reads the body as far as the envelope's header line, within the deadline. workerd hands a body
 * over in 4 KiB chunks, so even a 10 KB event would need several reads; a small body is cheaper
 * taken whole, in one native call.
 */
async function readHead(
  request: Request,
  body: ReadableStream<BodyChunk>,
  contentLength: number | undefined,
  encoding: ContentEncoding,
  deadline: Deadline,
): Promise<HeadRead> {
  const failed = (): HeadRead => ({ ok: false, reason: earlyEnd("receiving", deadline) });
  if (contentLength !== undefined && contentLength <= SMALL_BODY_BYTES) {
    let bytes: BodyChunk;
    try {
      bytes = new Uint8Array(await deadline.race(request.arrayBuffer()));
    } catch {
      return failed();
    }
    return readEnvelopeHead(wholeBody(bytes), encoding);
  }
  const reader = body.getReader();
  try {
    const head = await deadline.race(readEnvelopeHead(reader, encoding));
    reader.releaseLock();
    return head;
  } catch {
    reader.cancel().catch(() => {});
    return failed();
  }
}

/**
 * The chunks already read, then the rest of the body: the whole body again, as a stream of the
 * declared length. A body that ends short or runs long errors the stream, so R2 stores nothing.
 */
function prefixed(consumed: readonly BodyChunk[], rest: ReadableStream<BodyChunk>, length: number): ReadableStream<Uint8Array> {
  const { readable, writable } = new FixedLengthStream(length);
  void (async () => {
    const writer = writable.getWriter();
    for (const chunk of consumed) await writer.write(chunk);
    writer.releaseLock();
    await rest.pipeTo(writable);
  })().catch((error: unknown) => writable.abort(error).catch(() => {}));
  return readable;
}
