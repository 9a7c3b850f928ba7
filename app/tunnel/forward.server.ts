import type { BodyChunk } from "./envelope-head.server";

export interface ForwardRequest {
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
  cutoff: Cutoff;
}

/**
 * Ends an exchange early: at its deadline, or when the body fails. One controller and one timer
 * per envelope, the timer cleared when the exchange ends, rather than a timeout signal joined to
 * an abort signal (the profiler showed the signals' listeners at some 4 % of the tunnel's CPU).
 */
export class Cutoff {
  private readonly controller = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout>;
  /** The deadline passed: the body's fault if it was still arriving, else Sentry's. */
  timedOut = false;

  constructor(timeoutMs: number) {
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(new DOMException("The tunnel's deadline passed", "TimeoutError"));
    }, timeoutMs);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The body failed: cut the upstream request. */
  cut(reason: unknown): void {
    this.controller.abort(reason);
  }

  end(): void {
    clearTimeout(this.timer);
  }
}

/**
 * The runtime's own fetch, taken when this module loads: before Sentry's fetch instrumentation
 * wraps the global, so a forward adds no breadcrumb, no span and no trace header.
 */
const upstreamFetch: typeof fetch = globalThis.fetch.bind(globalThis);

export type ForwardFailure =
  | "upstream_redirect"
  | "upstream_unreachable"
  | "upstream_timeout"
  | "envelope_too_large"
  | "body_incomplete"
  | "body_timeout";

/** Sentry's answer, read whole: it is a few dozen bytes, and a stalled one is cut off at the deadline. */
export interface UpstreamAnswer {
  status: number;
  headers: Headers;
  body: ArrayBuffer | null;
}

export type ForwardResult = { ok: true; answer: UpstreamAnswer; bytes: number } | { ok: false; reason: ForwardFailure; bytes: number };

/** Settles as `work` does, or rejects when the exchange is cut off first. */
export function beforeCutoff<T>(work: Promise<T>, cutoff: Cutoff): Promise<T> {
  const { signal } = cutoff;
  return new Promise((resolve, reject) => {
    const expire = () => reject(signal.reason);
    if (signal.aborted) return expire();
    signal.addEventListener("abort", expire, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", expire));
  });
}

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
  const { cutoff } = forward;
  const body = outgoingBody(forward);
  let response: Response;
  try {
    response = await upstreamFetch(forward.url, {
      method: "POST",
      headers: forward.headers,
      body: body.stream,
      redirect: "manual",
      signal: cutoff.signal,
    });
  } catch {
    // Read before anything else settles: a failed request also fails its body's pipe afterwards,
    // and that must not be taken for the client's fault.
    const timedOut = cutoff.timedOut;
    const bodyFailed = cutoff.signal.aborted && !timedOut;
    const tooLarge = await body.stop();
    let reason: ForwardFailure = "upstream_unreachable";
    if (timedOut) reason = body.complete() ? "upstream_timeout" : "body_timeout";
    else if (bodyFailed) reason = tooLarge ? "envelope_too_large" : "body_incomplete";
    return { ok: false, reason, bytes: body.bytes() };
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    return { ok: false, reason: "upstream_redirect", bytes: body.bytes() };
  }
  let answer: ArrayBuffer;
  try {
    answer = await beforeCutoff(response.arrayBuffer(), cutoff);
  } catch {
    response.body?.cancel().catch(() => {});
    return { ok: false, reason: cutoff.timedOut ? "upstream_timeout" : "upstream_unreachable", bytes: body.bytes() };
  }
  const answerBody = answer.byteLength > 0 ? answer : null;
  return { ok: true, answer: { status: response.status, headers: response.headers, body: answerBody }, bytes: body.bytes() };
}

interface OutgoingBody {
  stream: BodyInit;
  bytes(): number;
  /** Every byte of the body has been handed to the upstream request. */
  complete(): boolean;
  /** Ends the piping after a failed fetch; says whether the body grew past the maximum. */
  stop(): Promise<boolean>;
}

function outgoingBody(forward: ForwardRequest): OutgoingBody {
  const { consumed, consumedBytes, rest, contentLength, maxBytes, cutoff } = forward;
  if (!rest) {
    const whole = concat(consumed, consumedBytes);
    return { stream: whole, bytes: () => consumedBytes, complete: () => true, stop: async () => false };
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
  const piping = (async () => {
    const writer = writable.getWriter();
    for (const chunk of consumed) await writer.write(chunk);
    writer.releaseLock();
    await source.pipeTo(writable, { preventAbort: true, signal: stopPiping.signal });
    piped = true;
  })().catch((error: unknown) => {
    // A failing body cuts the upstream request first; stopped on purpose, there is nothing to cut.
    if (error !== stopPiping.signal.reason) cutoff.cut(error);
    writable.abort(error).catch(() => {});
  });

  return {
    stream: readable,
    bytes: () => contentLength ?? counted,
    complete: () => piped,
    async stop() {
      stopPiping.abort();
      await piping;
      return tooLarge;
    },
  };
}

function concat(chunks: readonly BodyChunk[], length: number): BodyChunk {
  if (chunks.length === 1) return chunks[0]!;
  const whole = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return whole;
}
