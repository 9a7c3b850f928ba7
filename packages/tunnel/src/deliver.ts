import { sentryAnswer, tunnelAnswer, type Answer } from "./answers.ts";
import { envelopeItemTypes } from "./envelope/items.ts";
import type { ReceivedEnvelope } from "./receive.ts";
import { joinChunks, pipeAfter, type BodyChunk } from "./shared/body.ts";
import { earlyEnd, type Deadline } from "./shared/deadline.ts";
import { SPOOL_BUDGET_PERIOD_SECONDS, type SpoolBudget } from "./spool/budget.ts";
import type { Spool, SpoolBody, SpooledEnvelope } from "./spool/store.ts";
import type { DsnAllowList } from "./upstream/allow-list.ts";
import { UpstreamBreaker } from "./upstream/breaker.ts";
import { discardedCategories, type ClientReports } from "./upstream/client-reports.ts";
import { fateOfFailure, fateOfStatus } from "./upstream/fate.ts";
import { forwardEnvelope } from "./upstream/forward.ts";
import { upstreamRequestHeaders } from "./upstream/header-policy.ts";
import type { SentryLimits } from "./upstream/sentry-limits.ts";

/** The way to Sentry and to the spool, built once per tunnel by `createTunnel`. */
export interface Delivery {
  maxEnvelopeBytes: number;
  limits: SentryLimits;
  /** One per upstream URL of the allow-list. */
  breakers: ReadonlyMap<string, UpstreamBreaker>;
  spool: Spool;
  spoolBudget: SpoolBudget;
  reports: ClientReports;
  /** `undefined`: the runtime's own. */
  fetch: typeof fetch | undefined;
  /**
   * How long an envelope stored while Sentry is known to be down waits before the consumer first
   * reads it (`spool/decision.ts`, `deferralSeconds`): a read saved on each.
   */
  deferral: (failingForMs: number) => number;
}

/** One breaker per upstream of the allow-list, on the tunnel's clock. */
export function breakersFor(allowList: DsnAllowList, now: () => number): ReadonlyMap<string, UpstreamBreaker> {
  return new Map([...allowList.values()].map(({ upstreamUrl }) => [upstreamUrl, new UpstreamBreaker(now)]));
}

/**
 * The spool consumer's breakers, one per live breaker and paired with it: opened by one failure,
 * probing once per `retrySeconds`, and each learning at once of the other's success.
 */
export function consumerBreakersFor(live: ReadonlyMap<string, UpstreamBreaker>, now: () => number, retrySeconds: number): ReadonlyMap<string, UpstreamBreaker> {
  return new Map(
    [...live].map(([url, breaker]) => {
      const consumer = new UpstreamBreaker(now, { failuresToOpen: 1, coolDownMs: retrySeconds * 1000 });
      consumer.pairWith(breaker);
      return [url, consumer];
    }),
  );
}

export interface Delivered {
  answer: Answer;
  /** The bytes sent upstream, when a forward counted them. */
  bytes: number | undefined;
  upstreamStatus: number | null;
}

/** One envelope on its way: what storing it needs besides its body. */
interface Shipment {
  stored: Omit<SpooledEnvelope, "body" | "key">;
  clientIp: string | null;
  /** The body read whole and not compressed, whose items a client report can count. */
  plain: Uint8Array | undefined;
  /** How long the stored envelope waits before the consumer reads it. */
  delaySeconds?: number;
}

/**
 * The third stage: sends an envelope that passed every check to Sentry, or to the spool when
 * Sentry cannot take it: straight there while the breaker is open, or after Sentry failed a body
 * read whole. An envelope whose every item Sentry is rate-limiting is refused here.
 */
export async function deliver(
  envelope: ReceivedEnvelope,
  clientHeaders: Headers,
  deadline: Deadline,
  delivery: Delivery,
  receivedAt: number,
): Promise<Delivered> {
  const { body, head, dsn, encoding, contentLength, upstreamUrl } = envelope;
  const answered = (answer: Answer, upstreamStatus: number | null = null, bytes?: number): Delivered => ({ answer, bytes, upstreamStatus });
  // A body read whole (a small one, or one that ended with its header line) has nothing left to pipe.
  const whole = head.ended || head.consumedBytes === contentLength ? joinChunks(head.consumed, head.consumedBytes) : undefined;
  const plain = whole && encoding === "identity" ? whole : undefined;
  const sentrySaidNo = delivery.limits.refusal(dsn, () => plain && envelopeItemTypes(plain));
  if (sentrySaidNo) {
    delivery.reports.count(dsn, "ratelimit_backoff", discardedCategories(plain));
    return answered(tunnelAnswer("sentry_rate_limited", sentrySaidNo));
  }

  const headers = upstreamRequestHeaders(clientHeaders, encoding, contentLength);
  const shipment: Shipment = { stored: { url: upstreamUrl, headers, dsn, receivedAt }, clientIp: clientHeaders.get("cf-connecting-ip"), plain };
  const breaker = delivery.breakers.get(upstreamUrl)!;
  if (!breaker.allows()) {
    const down = { ...shipment, delaySeconds: delivery.deferral(breaker.failingForMs()) };
    const spooled = await spoolWhileSentryIsDown(envelope, whole, down, deadline, delivery);
    // What was stored is the whole body: read whole, or streamed to R2 at its declared length.
    if (spooled) return answered(spooled, null, whole?.byteLength ?? contentLength);
  }

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
  if (!forwarded.ok) {
    if (fateOfFailure(forwarded.reason) !== "unavailable") return answered(tunnelAnswer(forwarded.reason), null, forwarded.bytes);
    breaker.failed();
    const spooled = whole && (await storeInSpool(whole, shipment, delivery));
    return answered(spooled || tunnelAnswer(forwarded.reason), null, forwarded.bytes);
  }

  const { answer } = forwarded;
  delivery.limits.record(dsn, answer.status, answer.headers);
  if (fateOfStatus(answer.status) !== "unavailable") {
    breaker.succeeded();
    return answered(sentryAnswer(answer), answer.status, forwarded.bytes);
  }
  breaker.failed();
  const spooled = whole && (await storeInSpool(whole, shipment, delivery));
  return answered(spooled || sentryAnswer(answer), answer.status, forwarded.bytes);
}

/**
 * Sentry is down: the envelope goes straight to the spool, without waiting on Sentry. What cannot
 * be stored (a body of unknown length, which R2 cannot take; a large one without a bucket) still
 * tries Sentry: `undefined`.
 */
async function spoolWhileSentryIsDown(
  { body, head, contentLength }: ReceivedEnvelope,
  whole: Uint8Array | undefined,
  shipment: Shipment,
  deadline: Deadline,
  delivery: Delivery,
): Promise<Answer | undefined> {
  if (whole) return storeInSpool(whole, shipment, delivery);
  if (contentLength === undefined || !delivery.spool.accepts(shipment.stored, contentLength)) return undefined;
  const whileStored = prefixed(head.consumed, body, contentLength);
  const spooled = await deadline.race(storeInSpool({ stream: whileStored.stream, length: contentLength }, shipment, delivery)).catch(() => undefined);
  if (spooled) return spooled;
  // The body went into the failed store: there is nothing left to send Sentry. The log line says
  // whose failure it was: the client's body (gone, short or late), or the spool's.
  return tunnelAnswer(whileStored.clientFailed() || deadline.state === "passed" ? earlyEnd("receiving", deadline) : "spool_unavailable");
}

/** Stores the envelope within the budgets: the answer to give, or `undefined` when it could not be stored. */
async function storeInSpool(body: SpoolBody, { stored, clientIp, plain, delaySeconds }: Shipment, delivery: Delivery): Promise<Answer | undefined> {
  const { spool, spoolBudget, reports } = delivery;
  // The budgets count what is kept: the body packed, when it packs.
  const packed = await spool.pack(stored, body);
  const length = packed.body instanceof Uint8Array ? packed.body.byteLength : packed.body.length;
  if (!spool.accepts(packed.envelope, length)) return undefined;
  if (!(await spoolBudget(clientIp, length))) {
    reports.count(stored.dsn, "queue_overflow", discardedCategories(plain));
    return tunnelAnswer("spool_full", { "retry-after": String(SPOOL_BUDGET_PERIOD_SECONDS) });
  }
  if (!(await spool.store(packed.envelope, packed.body, delaySeconds))) return undefined;
  return tunnelAnswer("spooled");
}

/**
 * The chunks already read, then the rest of the body: the whole body again, as a stream of the
 * declared length. A body that ends short or runs long errors the stream, so R2 stores nothing;
 * `clientFailed` then tells a client's failure from the store's.
 */
function prefixed(consumed: readonly BodyChunk[], rest: ReadableStream<BodyChunk>, length: number): { stream: ReadableStream<Uint8Array>; clientFailed: () => boolean } {
  const { readable, writable } = new FixedLengthStream(length);
  const reader = rest.getReader();
  let clientFailed = false;
  // A reader of its own rather than a native pipe: this path runs only while Sentry is down.
  const watched = new ReadableStream<BodyChunk>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        clientFailed = true;
        controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  pipeAfter(consumed, watched, writable).catch((error: unknown) => writable.abort(error).catch(() => {}));
  return { stream: readable, clientFailed: () => clientFailed };
}
