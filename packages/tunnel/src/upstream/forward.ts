import { joinChunks, pipeAfter, readUpTo, type BodyChunk } from "../shared/body.ts";
import { earlyEnd, type Deadline, type EarlyEnd } from "../shared/deadline.ts";

interface ForwardRequest {
  url: string;
  headers: Record<string, string>;
  /** Bytes already read from the body, sent first and unchanged. */
  consumed: readonly BodyChunk[];
  consumedBytes: number;
  /** The unread rest of the body; `undefined` when `consumed` is all of it. */
  rest: ReadableStream<BodyChunk> | undefined;
  /** The body's declared length, which the runtime has already held the client to. */
  contentLength: number | undefined;
  maxBytes: number;
  deadline: Deadline;
  /** Replaces the runtime's fetch: tests and simulations answer as Sentry would. */
  fetch?: typeof fetch | undefined;
}

/** A body already in memory, whole: what the spool, the client reports and CSP reports send. */
interface WholeForward {
  url: string;
  headers: Record<string, string>;
  body: BodyChunk;
  deadline: Deadline;
  fetch?: typeof fetch | undefined;
}

/** {@link forwardEnvelope} for a body in hand, with its length declared. */
export function forwardWhole({ url, headers, body, deadline, fetch }: WholeForward): Promise<ForwardResult> {
  const length = body.byteLength;
  return forwardEnvelope({
    url,
    headers: { ...headers, "content-length": String(length) },
    consumed: [body],
    consumedBytes: length,
    rest: undefined,
    contentLength: length,
    maxBytes: length,
    deadline,
    fetch,
  });
}

/** Sentry's answer is a few dozen bytes; one past this is not Sentry's, and its body is dropped. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * The runtime's own fetch, taken when this module loads: before Sentry's fetch instrumentation
 * wraps the global, so a forward adds no breadcrumb, no span and no trace header.
 */
const upstreamFetch: typeof fetch = globalThis.fetch.bind(globalThis);

export type ForwardFailure = "upstream_redirect" | EarlyEnd;

/**
 * Sentry's answer: its status and headers, and the body of a refusal read whole up to
 * {@link MAX_ANSWER_BYTES}; a body that stalls is given up at the deadline, and the status stands.
 * A 2xx's body is not read.
 */
// Decision 026.
export interface UpstreamAnswer {
  status: number;
  headers: Headers;
  /** `null` for a 2xx, and when the answer had no body, one too large to be Sentry's, or one that did not come whole by the deadline. */
  body: Uint8Array<ArrayBuffer> | null;
}

export type ForwardResult = { ok: true; answer: UpstreamAnswer; bytes: number } | { ok: false; reason: ForwardFailure; bytes: number };

/**
 * POSTs the envelope upstream, streaming what is left of the body without holding it.
 *
 * With a declared length the rest is piped natively into a FixedLengthStream, so workerd moves the
 * bytes without a JavaScript call per chunk and upstream gets a Content-Length. Only a body of
 * unknown length goes through a counting JavaScript transform, because nothing else can stop it
 * at `maxBytes`.
 *
 * When the body fails (the client went away, or it grew past the maximum), the upstream request is
 * aborted *before* its body stream is: workerd ends a chunked upload whose stream errors as if it
 * had finished, and Sentry would take half an envelope for a whole one.
 */
export async function forwardEnvelope(forward: ForwardRequest): Promise<ForwardResult> {
  const { deadline, fetch: send = upstreamFetch } = forward;
  // A body in hand is whole already: Sentry's share of the time starts now.
  if (!forward.rest) deadline.giveUpstreamItsShare();
  const body = outgoingBody(forward);
  const init: RequestInit = { method: "POST", headers: forward.headers, body: body.stream, redirect: "manual" };
  let response: Response;
  try {
    // Every request gets the deadline's signal. A streamed body needs it so that a failing body
    // aborts the request rather than ends it. A body in hand needs it too: a request left behind
    // when the deadline passed would otherwise still go out (workerd may hold it for a free
    // connection first) and reach Sentry after the envelope was given up on, or stored to be sent
    // again: a duplicate.
    response = await send(forward.url, { ...init, signal: deadline.signal });
  } catch {
    // Nothing here waits on the client's body, which may be stalled: the answer goes out now.
    const reason = earlyEnd("forwarding", deadline, { complete: body.complete(), tooLarge: body.tooLarge() });
    body.stop();
    return { ok: false, reason, bytes: body.bytes() };
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    return { ok: false, reason: "upstream_redirect", bytes: body.bytes() };
  }
  let answer: Uint8Array<ArrayBuffer> | null = null;
  if (response.ok) {
    // Sentry took it. The body only echoes the event id the SDK made, and no SDK reads it: waiting
    // for it would wake the isolate a second time for every envelope (decision 026).
    response.body?.cancel().catch(() => {});
  } else {
    try {
      // A refusal's body says why (an invalid envelope, a disabled project): a developer reads it.
      answer = await deadline.race(readCapped(response));
    } catch {
      // The status has come, and with it the envelope's fate: only this body is lost. Taking its
      // stall for Sentry's silence would count a failure against an ingest that answered.
      response.body?.cancel().catch(() => {});
    }
  }
  return { ok: true, answer: { status: response.status, headers: response.headers, body: answer }, bytes: body.bytes() };
}

/**
 * The answer's body, or `null` when it has none or runs past {@link MAX_ANSWER_BYTES} (then it is
 * not read further). Sentry's answers declare their length: those are read in one native call.
 */
async function readCapped(response: Response): Promise<Uint8Array<ArrayBuffer> | null> {
  const stream = response.body;
  if (!stream) return null;
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > MAX_ANSWER_BYTES) {
    stream.cancel().catch(() => {});
    return null;
  }
  if (declared >= 0) {
    // The runtime holds a body to its declared length, so this reads no more than it says.
    const whole = new Uint8Array(await response.arrayBuffer());
    return whole.byteLength === 0 ? null : whole;
  }
  const answer = await readUpTo(stream, MAX_ANSWER_BYTES);
  return answer === undefined || answer.byteLength === 0 ? null : answer;
}

interface OutgoingBody {
  stream: BodyInit;
  bytes(): number;
  /** Every byte of the body has been handed to the upstream request. */
  complete(): boolean;
  /** The body grew past the maximum. */
  tooLarge(): boolean;
  /** Ends the piping after a failed fetch, without waiting for a client that may be stalled. */
  stop(): void;
}

function outgoingBody(forward: ForwardRequest): OutgoingBody {
  const { consumed, consumedBytes, rest, contentLength, maxBytes, deadline } = forward;
  if (!rest) {
    const whole = joinChunks(consumed, consumedBytes);
    // Methods, not arrow properties, as in createTunnel: fewer bytes in every adopter's Worker.
    return { stream: whole, bytes() { return consumedBytes; }, complete() { return true; }, tooLarge() { return false; }, stop() {} };
  }

  let counted = consumedBytes;
  let tooLarge = false;
  let source = rest;
  const { readable, writable } =
    contentLength === undefined ? new IdentityTransformStream() : new FixedLengthStream(contentLength);
  if (contentLength === undefined) {
    source = rest.pipeThrough(
      new TransformStream<BodyChunk, BodyChunk>({
        transform(chunk, controller) {
          counted += chunk.byteLength;
          if (counted > maxBytes) {
            tooLarge = true;
            controller.error(new RangeError("envelope larger than the maximum"));
          } else {
            controller.enqueue(chunk);
          }
        },
      }),
    );
  }

  const stopPiping = new AbortController();
  let piped = false;
  void (async () => {
    await pipeAfter(consumed, source, writable, { preventAbort: true, signal: stopPiping.signal });
    piped = true;
    deadline.giveUpstreamItsShare();
  })().catch((error: unknown) => {
    // A failing body cuts the upstream request first; stopped on purpose, there is nothing to cut.
    if (error !== stopPiping.signal.reason) deadline.cut(error);
    writable.abort(error).catch(() => {});
  });

  return {
    stream: readable,
    bytes() { return contentLength ?? counted; },
    complete() { return piped; },
    tooLarge() { return tooLarge; },
    stop() { stopPiping.abort(); },
  };
}
