import { tunnelAnswer, type Answer } from "./answers.ts";
import type { Delivered, Shipment } from "./shipment.ts";
import { envelopeItemTypes } from "../envelope/items.ts";
import type { ReceivedEnvelope } from "./receive.ts";
import { pipeAfter, readByScript, type BodyChunk } from "../shared/body.ts";
import { earlyEnd, type Deadline } from "../shared/deadline.ts";
import { BindingFailed, type Within } from "../spool/binding-call.ts";
import { SPOOL_BUDGET_PERIOD_SECONDS, type SpoolBudget } from "../spool/budget.ts";
import type { Spool, SpoolBody } from "../spool/store.ts";
import { discardedCategories, type ClientReports } from "../upstream/client-reports.ts";
import { fateOfFailure, fateOfStatus } from "../upstream/fate.ts";
import type { ForwardResult } from "../upstream/forward.ts";
import type { UpstreamState } from "../upstream/state.ts";

/**
 * What the capabilities add to one envelope's delivery: Sentry's rate limits kept at the edge and
 * the breaker, learnt from every envelope's answer (for the spool, and for CSP reports, which share
 * an ingest with envelopes), and, with a spool, what is stored when Sentry cannot take it. A tunnel
 * given neither has none, and forwards every envelope.
 */
export interface KeepParts extends UpstreamState {
  reports: ClientReports;
  store: SpoolStore | undefined;
}

/** The spool, its byte budgets, and how long an envelope stored while Sentry is down waits (`spool/decision.ts`). */
export interface SpoolStore {
  spool: Spool;
  spoolBudget: SpoolBudget;
  deferral: (failingForMs: number) => number;
}

/**
 * The stage by its functions, for `deliver` to call: given by the spool and CSP reports with their
 * parts rather than imported by `deliver`, so that a Worker given neither does not carry it (some
 * 2.2 KiB of gzip, a seventh of the minimal Worker; decision 045).
 */
export const KEEP_STAGE = { beforeForward: keepBeforeForward, afterForward: keepAfterForward };

/** The stage and one tunnel's parts, as `deliver` is given them. */
export interface Keeping {
  stage: typeof KEEP_STAGE;
  parts: KeepParts;
}

/**
 * Before the forward: an envelope whose every item Sentry is rate-limiting is refused here, and
 * one sent while the breaker is open goes straight to the spool. `undefined`: forward it.
 */
async function keepBeforeForward(
  { limits, breakers, reports, store }: KeepParts,
  envelope: ReceivedEnvelope,
  shipment: Shipment,
  deadline: Deadline,
): Promise<Delivered | undefined> {
  const { plain, whole } = shipment;
  const { dsn, upstreamUrl, contentLength } = envelope;
  const sentrySaidNo = limits.refusal(dsn, () => plain && envelopeItemTypes(plain));
  if (sentrySaidNo) {
    reports.count(dsn, "ratelimit_backoff", discardedCategories(plain));
    return { answer: tunnelAnswer("sentry_rate_limited", sentrySaidNo), bytes: undefined, upstreamStatus: null };
  }
  const breaker = breakers.get(upstreamUrl)!;
  // A body of unknown length, too large to hold, cannot go to R2 as it streams: it goes to Sentry.
  if (!store || breaker.allows() || (!whole && contentLength === undefined)) return undefined;
  const down = { ...shipment, delaySeconds: store.deferral(breaker.failingForMs()) };
  const spooled = await spoolWhileSentryIsDown(envelope, down, deadline, store, reports);
  // What was stored is the whole body: read whole, or streamed to R2 at its declared length.
  return spooled && { answer: spooled, bytes: whole?.byteLength ?? contentLength, upstreamStatus: null, sentryKnownDown: true };
}

/**
 * After the forward: learns from Sentry's answer; the answer to give instead when Sentry could not
 * take the envelope and it was stored, or could not be.
 */
async function keepAfterForward({ limits, breakers, reports, store }: KeepParts, forwarded: ForwardResult, shipment: Shipment, deadline: Deadline): Promise<Answer | undefined> {
  const { dsn } = shipment.stored;
  const breaker = breakers.get(shipment.upstreamUrl)!;
  if (forwarded.ok) {
    limits.record(dsn, forwarded.answer.status, forwarded.answer.headers);
    if (fateOfStatus(forwarded.answer.status) !== "unavailable") return void breaker.succeeded();
  } else if (fateOfFailure(forwarded.reason) !== "unavailable") {
    return undefined;
  }
  breaker.failed();
  if (!store) return undefined;
  const kept = shipment.whole && (await storeInSpool(shipment.whole, shipment, store, reports, deadline));
  if (kept) return kept;
  // Too large to keep: to hold in memory, or, with no bucket, for a queue message.
  reports.count(dsn, "buffer_overflow", discardedCategories(shipment.plain));
  return tunnelAnswer("not_kept_in_hand");
}

/**
 * Sentry is down: the envelope goes straight to the spool, without waiting on Sentry; a streaming
 * body of declared length into R2 as it arrives. What cannot be stored (a large one without a
 * bucket) still tries Sentry: `undefined`.
 */
async function spoolWhileSentryIsDown(
  { body, head, contentLength }: ReceivedEnvelope,
  shipment: Shipment,
  deadline: Deadline,
  store: SpoolStore,
  reports: ClientReports,
): Promise<Answer | undefined> {
  if (shipment.whole) return storeInSpool(shipment.whole, shipment, store, reports, deadline);
  if (contentLength === undefined || contentLength > store.spool.room(shipment.stored)) return undefined;
  const whileStored = prefixed(head.consumed, body, contentLength);
  // The body goes into the store: there is nothing left to send Sentry. A store that fails while
  // the body is still coming may have failed for the client's body (gone, short or late).
  const clientFault = () => whileStored.clientFailed() || (deadline.state === "passed" && !whileStored.sent());
  return storeInSpool({ stream: whileStored.stream, length: contentLength }, shipment, store, reports, deadline, clientFault);
}

/**
 * Stores the envelope within the budgets, each binding's call within the request's bound: the
 * answer to give, or `undefined` when it could not be stored at all (too large, with no bucket),
 * and Sentry's answer stands. A binding that fails or does not answer loses the envelope: 503
 * `spool_unavailable`, its line naming the binding, counted in the client reports.
 */
async function storeInSpool(
  body: SpoolBody,
  { stored, clientIp, plain, delaySeconds }: Shipment,
  { spool, spoolBudget }: SpoolStore,
  reports: ClientReports,
  deadline: Deadline,
  clientFault: () => boolean = () => false,
): Promise<Answer | undefined> {
  // The budgets count what is kept: the body packed, when it packs.
  const packed = await spool.pack(stored, body);
  const length = packed.body instanceof Uint8Array ? packed.body.byteLength : packed.body.length;
  if (length > spool.room(packed.envelope)) return undefined;
  const within: Within = (call) => deadline.bound(call);
  const lost = (error: unknown): Answer => {
    if (!(error instanceof BindingFailed)) throw error;
    reports.count(stored.dsn, "network_error", discardedCategories(plain));
    return { ...tunnelAnswer("spool_unavailable"), binding: error.binding };
  };
  try {
    if (!(await spoolBudget(clientIp, length, within))) {
      reports.count(stored.dsn, "queue_overflow", discardedCategories(plain));
      return tunnelAnswer("spool_full", { "retry-after": String(SPOOL_BUDGET_PERIOD_SECONDS) });
    }
  } catch (error) {
    return lost(error);
  }
  try {
    await spool.store(packed.envelope, packed.body, within, delaySeconds);
    return tunnelAnswer("spooled");
  } catch (error) {
    return clientFault() ? tunnelAnswer(earlyEnd("receiving", deadline)) : lost(error);
  }
}

/**
 * The chunks already read, then the rest of the body: the whole body again, as a stream of the
 * declared length. A body that ends short or runs long errors the stream, so R2 stores nothing;
 * `clientFailed` then tells a client's failure from the store's, and `sent` a body that came whole.
 */
function prefixed(
  consumed: readonly BodyChunk[],
  rest: ReadableStream<BodyChunk>,
  length: number,
): { stream: ReadableStream<Uint8Array>; clientFailed: () => boolean; sent: () => boolean } {
  const { readable, writable } = new FixedLengthStream(length);
  let clientFailed = false;
  let sent = false;
  // Read by script rather than piped natively: this path runs only while Sentry is down.
  const watched = readByScript(rest, () => (clientFailed = true));
  pipeAfter(consumed, watched, writable).then(
    () => (sent = true),
    (error: unknown) => writable.abort(error).catch(() => {}),
  );
  return { stream: readable, clientFailed: () => clientFailed, sent: () => sent };
}
