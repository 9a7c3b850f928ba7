import { sentryAnswer, tunnelAnswer } from "./answers.ts";
import type { ReceivedEnvelope } from "./receive.ts";
import { joinChunks } from "../shared/body.ts";
import type { Deadline } from "../shared/deadline.ts";
import type { Keeping } from "./keep.ts";
import type { Delivered, Shipment } from "./shipment.ts";
import type { ClientReports } from "../upstream/client-reports.ts";
import { forwardEnvelope } from "../upstream/forward.ts";
import { upstreamRequestHeaders } from "../upstream/header-policy.ts";

/** The way to Sentry, built once per tunnel by `createTunnel`. */
export interface Delivery {
  maxEnvelopeBytes: number;
  reports: ClientReports;
  /** `undefined`: the runtime's own. */
  fetch: typeof fetch | undefined;
  /** What the spool or CSP reports add to the delivery (`keep.ts`), when given: without, Sentry's every answer is passed on as it came. */
  keep: Keeping | undefined;
}

/**
 * The third stage: sends an envelope that passed every check to Sentry, streaming what is left of
 * its body. A tunnel with a spool or CSP reports may answer instead (`keep.ts`): before, when Sentry
 * is limiting it or known down; after, when Sentry could not take it and it was stored, or lost.
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
  const { keep } = delivery;
  const kept = keep && (await keep.stage.beforeForward(keep.parts, envelope, shipment, deadline));
  if (kept) return kept;

  const forwarded = await forwardEnvelope({
    url: upstreamUrl,
    headers,
    consumed: whole ? [whole] : head.consumed,
    consumedBytes: head.consumedBytes,
    rest: whole ? undefined : body,
    contentLength,
    maxBytes: delivery.maxEnvelopeBytes,
    deadline,
    fetch: delivery.fetch,
  });
  const stored = keep && (await keep.stage.afterForward(keep.parts, forwarded, shipment, deadline));
  if (!forwarded.ok) return { answer: stored ?? tunnelAnswer(forwarded.reason), bytes: forwarded.bytes, upstreamStatus: null };
  return { answer: stored ?? sentryAnswer(forwarded.answer), bytes: forwarded.bytes, upstreamStatus: forwarded.answer.status };
}
