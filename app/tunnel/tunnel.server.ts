import { admit, createGate, type Gate } from "./admit.server";
import { tunnelAnswer, type Answer } from "./answers.server";
import { createDelivery, deliver, type Delivery } from "./deliver.server";
import { forwardSecurityReport } from "./forward-report.server";
import { logToConsole, NO_FACTS, recordRequest, type Recorder, type RequestFacts } from "./log-line.server";
import { receiveEnvelope } from "./receive.server";
import { corsHeadersFor } from "./request/cors.server";
import { compileAllowList, type DsnAllowList } from "./upstream/allow-list.server";
import type { TunnelRuntime, TunnelSettings } from "./settings.server";
import { Deadline } from "./shared/deadline.server";

/** Answers one request to the tunnel; never rejects. */
export type Tunnel = (request: Request) => Promise<Response>;

/** What every request's stages share, built once per tunnel. */
interface TunnelParts {
  gate: Gate;
  allowList: DsnAllowList;
  delivery: Delivery;
  maxEnvelopeBytes: number;
}

/**
 * Builds the tunnel: `POST /monitoring?o=&p=[&r=]` checks the envelope's header line and streams
 * the body, unchanged, to the DSN's Sentry ingest. The allow-list, the limiter, the breakers and
 * the way to the spool are made here, once; each request then passes the stages in
 * {@link serveRequest}. The Worker entry, the Remix route and the tests all use a tunnel made here.
 */
export function createTunnel(settings: TunnelSettings, runtime: TunnelRuntime = {}): Tunnel {
  const allowList = compileAllowList(settings.allowedDsns, settings.upstreamOrigin);
  const gate = createGate(settings, runtime.rateLimiter, allowList);
  const parts: TunnelParts = { gate, allowList, delivery: createDelivery(settings, runtime, allowList), maxEnvelopeBytes: settings.maxEnvelopeBytes };
  const recorder: Recorder = { log: runtime.log ?? logToConsole, analytics: runtime.analytics };

  return async (request) => {
    const receivedAt = Date.now();
    const deadline = new Deadline(settings.timeoutMs);
    let served: Served;
    try {
      served = await serveRequest(request, deadline, parts, receivedAt);
    } catch (error) {
      runtime.reportError?.(error, request);
      served = { answer: tunnelAnswer("internal_error"), facts: NO_FACTS };
    } finally {
      deadline.end();
    }
    const cors = corsHeadersFor(request.headers.get("origin"), gate.partners);
    if (cors) for (const [name, value] of Object.entries(cors)) served.answer.response.headers.set(name, value);
    recordRequest(served.answer, served.facts, receivedAt, recorder);
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
  if (!admission.admitted) return { answer: admission.answer, facts: { ...NO_FACTS, kind: admission.kind } };
  if (admission.kind === "security_report") {
    const { answer, bytes, upstreamStatus } = await forwardSecurityReport(request, deadline, admission.target, parts.delivery.fetch);
    return { answer, facts: { kind: "security_report", query: admission.target.project, bytes: bytes ?? null, upstreamStatus } };
  }

  const received = await receiveEnvelope(request, deadline, parts);
  if (!received.ok) return { answer: received.answer, facts: { ...NO_FACTS, query: admission.query, bytes: received.bytes } };
  // Logged as the project it goes to, which may not be the one the query named.
  const { answer, bytes, upstreamStatus } = await deliver(received.envelope, request.headers, deadline, parts.delivery, receivedAt);
  return { answer, facts: { kind: "envelope", query: received.query, bytes: bytes ?? received.bytes, upstreamStatus } };
}
