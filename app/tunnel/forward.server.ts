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

export type ForwardFailure = "upstream_redirect" | "upstream_unreachable" | "upstream_timeout" | "envelope_too_large" | "body_incomplete";

export type ForwardResult = { ok: true; response: Response; bytes: number } | { ok: false; reason: ForwardFailure; bytes: number };

/**
 * POSTs the envelope upstream, streaming what is left of the body without holding it.
 *
 * With a declared length the rest is piped natively into a FixedLengthStream, so workerd moves the
 * bytes without a JavaScript call per chunk and upstream gets a Content-Length; a body that ends
 * short errors the stream, and the upstream request dies unfinished rather than delivering half an
 * envelope. Only a body of unknown length goes through a counting JavaScript transform, because
 * nothing else can stop it at `maxBytes`.
 */
export async function forwardEnvelope(forward: ForwardRequest): Promise<ForwardResult> {
  const body = bodyFor(forward);
  const timeout = AbortSignal.timeout(forward.timeoutMs);
  let response: Response;
  try {
    response = await fetch(forward.url, {
      method: "POST",
      headers: forward.headers,
      body: body.stream,
      redirect: "manual",
      signal: timeout,
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

function bodyFor(forward: ForwardRequest): OutgoingBody {
  const { consumed, consumedBytes, rest, contentLength, maxBytes } = forward;
  if (!rest) {
    const whole = concat(consumed, consumedBytes);
    return { stream: whole, bytes: () => consumedBytes, stop: async () => undefined };
  }

  let counted = consumedBytes;
  let tooLarge = false;
  const pipeAbort = new AbortController();
  let outgoing: ReadableStream<Uint8Array>;
  let source: ReadableStream<Uint8Array> = rest;
  let sink: WritableStream<Uint8Array>;
  if (contentLength !== undefined) {
    ({ readable: outgoing, writable: sink } = new FixedLengthStream(contentLength));
  } else {
    ({ readable: outgoing, writable: sink } = new IdentityTransformStream());
    source = rest.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
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

  let bodyFailed = false;
  const piping = (async () => {
    const writer = sink.getWriter();
    for (const chunk of consumed) await writer.write(chunk);
    writer.releaseLock();
    await source.pipeTo(sink, { signal: pipeAbort.signal });
  })().catch((error: unknown) => {
    // Once upstream has answered, a failing pipe is no longer this request's concern.
    if (error !== pipeAbort.signal.reason) bodyFailed = true;
  });

  return {
    stream: outgoing,
    bytes: () => contentLength ?? counted,
    async stop() {
      pipeAbort.abort();
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
