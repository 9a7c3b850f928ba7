import type { BodyChunk } from "./envelope-head.server";

export interface ForwardRequest {
  url: string;
  headers: Headers;
  /** Bytes already read from the body, sent first and unchanged. */
  consumed: readonly BodyChunk[];
  consumedBytes: number;
  /** The unread rest of the body; `undefined` when `consumed` is all of it. */
  rest: ReadableStream<BodyChunk> | undefined;
  /** The body's declared length, which the runtime has already held the client to. */
  contentLength: number | undefined;
  maxBytes: number;
  timeoutMs: number;
}

/**
 * The runtime's own fetch, taken when this module loads: before Sentry's fetch instrumentation
 * wraps the global, so a forward adds no breadcrumb, no span and no trace header.
 */
const upstreamFetch: typeof fetch = globalThis.fetch.bind(globalThis);

export type ForwardFailure = "upstream_redirect" | "upstream_unreachable" | "upstream_timeout" | "envelope_too_large" | "body_incomplete";

export type ForwardResult = { ok: true; response: Response; bytes: number } | { ok: false; reason: ForwardFailure; bytes: number };

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
  const upstream = new AbortController();
  const timeout = AbortSignal.timeout(forward.timeoutMs);
  const body = outgoingBody(forward, upstream);
  let response: Response;
  try {
    response = await upstreamFetch(forward.url, {
      method: "POST",
      headers: forward.headers,
      body: body.stream,
      redirect: "manual",
      signal: AbortSignal.any([timeout, upstream.signal]),
    });
  } catch {
    const bodyFailure = await body.stop();
    const reason = bodyFailure ?? (timeout.aborted ? "upstream_timeout" : "upstream_unreachable");
    return { ok: false, reason, bytes: body.bytes() };
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    return { ok: false, reason: "upstream_redirect", bytes: body.bytes() };
  }
  return { ok: true, response, bytes: body.bytes() };
}

interface OutgoingBody {
  stream: BodyInit;
  bytes(): number;
  /** Ends the piping after a failed fetch; says whether the body itself was what failed. */
  stop(): Promise<"envelope_too_large" | "body_incomplete" | undefined>;
}

function outgoingBody(forward: ForwardRequest, upstream: AbortController): OutgoingBody {
  const { consumed, consumedBytes, rest, contentLength, maxBytes } = forward;
  if (!rest) {
    const whole = concat(consumed, consumedBytes);
    return { stream: whole, bytes: () => consumedBytes, stop: async () => undefined };
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
  let bodyFailed = false;
  const piping = (async () => {
    const writer = writable.getWriter();
    for (const chunk of consumed) await writer.write(chunk);
    writer.releaseLock();
    await source.pipeTo(writable, { preventAbort: true, signal: stopPiping.signal });
  })().catch((error: unknown) => {
    if (error !== stopPiping.signal.reason) {
      bodyFailed = true;
      upstream.abort(error);
    }
    writable.abort(error).catch(() => {});
  });

  return {
    stream: readable,
    bytes: () => contentLength ?? counted,
    async stop() {
      stopPiping.abort();
      await piping;
      if (tooLarge) return "envelope_too_large";
      return bodyFailed ? "body_incomplete" : undefined;
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
