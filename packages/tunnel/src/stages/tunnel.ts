import { admit, kindAt, notFoundSentence, type Gate } from "./admit.ts";
import { tunnelAnswer, type Answer } from "./answers.ts";
import { deliver, type Delivery } from "./deliver.ts";
import type { CompressedParts, CspParts, SpoolParts } from "../setup/capability.ts";
import { NO_FACTS, recordRequest, type Recorder, type RequestFacts } from "./log-line.ts";
import { receiveEnvelope } from "./receive.ts";
import { corsHeadersFor } from "../request/cors.ts";
import { Deadline } from "../shared/deadline.ts";
import { SECURITY_CATEGORY } from "../upstream/client-reports.ts";
import type { DsnAllowList } from "../upstream/allow-list.ts";

/** Answers one request to the tunnel; never rejects. */
export type Tunnel = (request: Request) => Promise<Response>;

/** What every request's stages share: built once, by `createTunnel`. */
export interface TunnelParts {
  gate: Gate;
  allowList: DsnAllowList;
  delivery: Delivery;
  recorder: Recorder;
  /** The CSP reports' stage, when the tunnel was given `cspReports`. */
  forwardReport: CspParts["forward"] | undefined;
  /** The scan of a compressed body's header line, when the tunnel was given `compressedBodies`. */
  inflate: CompressedParts["scan"] | undefined;
  /** The spool's read of a large body whole, in the memory it keeps in hand, when the tunnel was given one. */
  readRest: SpoolParts["readRest"] | undefined;
  maxEnvelopeBytes: number;
  timeoutMs: number;
  /** A bug in the tunnel itself; the client gets a 500 either way. */
  reportError: (error: unknown, request: Request) => void;
  now: () => number;
}

/**
 * The tunnel: `POST` to a route checks the envelope's header line and streams the body, unchanged,
 * to the DSN's Sentry ingest; `POST` to a route's report path forwards a CSP report to the app's own
 * project. Each request passes the stages in {@link serveRequest}, then its log line is written.
 */
export function tunnelOf(parts: TunnelParts): Tunnel {
  return async (request) => {
    const receivedAt = parts.now();
    const deadline = new Deadline(parts.timeoutMs);
    let served: Served;
    try {
      served = await serveRequest(request, deadline, parts, receivedAt);
    } catch (error) {
      parts.reportError(error, request);
      served = { answer: tunnelAnswer("internal_error"), facts: { ...NO_FACTS, kind: kindAt(new URL(request.url).pathname, parts.gate) } };
    } finally {
      deadline.end();
    }
    const cors = corsHeadersFor(request.headers.get("origin"), parts.gate.partners);
    if (cors) for (const [name, value] of Object.entries(cors)) served.answer.response.headers.set(name, value);
    recordRequest(served.answer, served.facts, receivedAt, request.headers.get("cf-connecting-ip"), parts.recorder);
    return served.answer.response;
  };
}

interface Served {
  answer: Answer;
  facts: RequestFacts;
}

/** A request through the stages: admitted, received (envelopes), then delivered or forwarded (CSP reports). */
async function serveRequest(request: Request, deadline: Deadline, parts: TunnelParts, receivedAt: number): Promise<Served> {
  const admission = await admit(request, parts.gate);
  if (!admission.admitted) {
    // Browsers count nothing of the CSP reports they send: one over its client's share is counted here.
    if (admission.answer.code === "rate_limited" && admission.kind === "security_report" && parts.gate.reports) {
      parts.delivery.reports.count(parts.gate.reports.dsn, "ratelimit_backoff", [SECURITY_CATEGORY]);
    }
    return { answer: admission.answer, facts: { ...NO_FACTS, kind: admission.kind } };
  }
  if (admission.kind === "security_report") {
    // The gate admits a CSP report only where the tunnel was given `cspReports`, which is this stage.
    const { answer, bytes, upstreamStatus } = await parts.forwardReport!(request, deadline, admission.target, parts.delivery);
    return { answer, facts: { kind: "security_report", query: admission.target.project, bytes: bytes ?? null, upstreamStatus } };
  }

  const received = await receiveEnvelope(request, deadline, parts);
  if (!received.ok) return { answer: received.answer, facts: { ...NO_FACTS, query: admission.query, bytes: received.bytes } };
  try {
    if (admission.otherSentryPath) {
      // An allowed DSN whose own Sentry path this is not: served only where its pages are told to post.
      received.envelope.body.cancel().catch(() => {});
      return { answer: tunnelAnswer("not_found", undefined, notFoundSentence(new URL(request.url).pathname)), facts: { ...NO_FACTS, query: received.query, bytes: received.bytes } };
    }
    // Logged as the project it goes to, which may not be the one the query named.
    const { answer, bytes, upstreamStatus, sentryKnownDown } = await deliver(received.envelope, request.headers, deadline, parts.delivery, receivedAt);
    return { answer, facts: { kind: "envelope", query: received.query, bytes: bytes ?? received.bytes, upstreamStatus, sentryKnownDown } };
  } finally {
    received.envelope.release?.();
  }
}
