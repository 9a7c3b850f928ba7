import { sentryAnswer, tunnelAnswer, type Answer } from "./answers.ts";
import type { ReceivedEnvelope } from "./receive.ts";
import { joinChunks, type BodyChunk } from "../shared/body.ts";
import type { Deadline } from "../shared/deadline.ts";
import type { InHand } from "../spool/in-hand.ts";
import type { EnvelopeFacts } from "../spool/store.ts";
import type { ClientReports } from "../upstream/client-reports.ts";
import { forwardEnvelope, type ForwardResult } from "../upstream/forward.ts";
import { upstreamRequestHeaders } from "../upstream/header-policy.ts";

/** The way to Sentry, built once per tunnel by `createTunnel`. */
export interface Delivery {
  maxEnvelopeBytes: number;
  reports: ClientReports;
  /** `undefined`: the runtime's own. */
  fetch: typeof fetch | undefined;
  /** The spool's or CSP reports' part (`keep.ts`), when given: without, Sentry's every answer is passed on as it came. */
  keeper: Keeper | undefined;
}

/**
 * What the capabilities add to one envelope's delivery: Sentry's rate limits kept at the edge and
 * the breaker, learnt from every envelope's answer (for the spool, and for CSP reports, which share
 * an ingest with envelopes), and, with a spool, what is stored when Sentry cannot take it. A tunnel
 * given neither has none, and forwards every envelope.
 */
export interface Keeper {
  /**
   * Before the forward: an envelope whose every item Sentry is rate-limiting is refused here, and
   * one sent while the breaker is open goes straight to the spool. `undefined`: forward it.
   */
  beforeForward(envelope: ReceivedEnvelope, shipment: Shipment, deadline: Deadline): Promise<Delivered | undefined>;
  /**
   * The rest of a body that streams to Sentry: with a spool, one of unknown length has a copy kept
   * in hand as it goes, within a budget; one of declared length streams only when the budget could
   * not take it whole (`receive.ts`), and is marked as not held.
   */
  streamed(envelope: ReceivedEnvelope, shipment: Shipment): ReadableStream<BodyChunk>;
  /**
   * After the forward: learns from Sentry's answer; the answer to give instead when Sentry could not
   * take the envelope and it was stored, or could not be.
   */
  afterForward(forwarded: ForwardResult, shipment: Shipment, deadline: Deadline): Promise<Answer | undefined>;
}

export interface Delivered {
  answer: Answer;
  /** The bytes sent upstream, when a forward counted them. */
  bytes: number | undefined;
  upstreamStatus: number | null;
  /**
   * Answered without asking Sentry, which is known to be down (its breaker open): stored, or not
   * stored, a loss. What was stored is the same news as every other envelope stored so, and its
   * line is said once per project and window.
   */
  sentryKnownDown?: true;
}

/** One envelope on its way: what storing it needs besides its body. */
export interface Shipment {
  stored: EnvelopeFacts;
  /** Where it goes: its breaker's key. */
  upstreamUrl: string;
  clientIp: string | null;
  /** The body, when it was read whole (a small one, or one that ended with its header line). */
  whole: Uint8Array | undefined;
  /** The body read whole and not compressed, whose items a client report can count. */
  plain: Uint8Array | undefined;
  /** How long the stored envelope waits before the consumer reads it. */
  delaySeconds?: number;
  /** The copy of a streaming body kept while it goes to Sentry, or its want of one (`Keeper.streamed`). */
  inHand?: InHand;
}

/**
 * The third stage: sends an envelope that passed every check to Sentry, streaming what is left of
 * its body. A tunnel with a keeper may answer instead: before, when Sentry is limiting it or
 * known down; after, when Sentry could not take it and it was stored.
 */
export async function deliver(
  envelope: ReceivedEnvelope,
  clientHeaders: Headers,
  deadline: Deadline,
  delivery: Delivery,
  receivedAt: number,
): Promise<Delivered> {
  const { body, head, dsn, encoding, contentLength, upstreamUrl } = envelope;
  const whole = head.ended || head.consumedBytes === contentLength ? joinChunks(head.consumed, head.consumedBytes) : undefined;
  const headers = upstreamRequestHeaders(clientHeaders, encoding, contentLength);
  const shipment: Shipment = {
    stored: { headers, dsn, receivedAt },
    upstreamUrl,
    clientIp: clientHeaders.get("cf-connecting-ip"),
    whole,
    plain: whole && encoding === "identity" ? whole : undefined,
  };
  const kept = await delivery.keeper?.beforeForward(envelope, shipment, deadline);
  if (kept) return kept;

  const forwarded = await forwardEnvelope({
    url: upstreamUrl,
    headers,
    consumed: whole ? [whole] : head.consumed,
    consumedBytes: head.consumedBytes,
    rest: whole ? undefined : (delivery.keeper?.streamed(envelope, shipment) ?? body),
    contentLength,
    maxBytes: delivery.maxEnvelopeBytes,
    deadline,
    fetch: delivery.fetch,
  });
  const stored = await delivery.keeper?.afterForward(forwarded, shipment, deadline);
  if (!forwarded.ok) return { answer: stored ?? tunnelAnswer(forwarded.reason), bytes: forwarded.bytes, upstreamStatus: null };
  return { answer: stored ?? sentryAnswer(forwarded.answer), bytes: forwarded.bytes, upstreamStatus: forwarded.answer.status };
}
