/** A chunk of a request body: always backed by a plain ArrayBuffer. */
export type BodyChunk = Uint8Array<ArrayBuffer>;

const encoder = new TextEncoder();

/** A string's UTF-8 bytes. `TextEncoder` always returns a fresh array of its own; workers-types types it loosely. */
export function utf8Bytes(text: string): BodyChunk {
  return encoder.encode(text) as BodyChunk;
}

/** Where the body's chunks come from: a stream's reader, or a body already read whole. */
export type ChunkSource = Pick<ReadableStreamDefaultReader<BodyChunk>, "read">;

/** A body read whole, offered as one chunk. */
export function wholeBody(bytes: BodyChunk): ChunkSource {
  let given = false;
  return {
    async read() {
      if (given || bytes.byteLength === 0) return { done: true, value: undefined };
      given = true;
      return { done: false, value: bytes };
    },
  };
}

/** The chunks as one: the only chunk itself, or a copy of all of them. */
export function joinChunks(chunks: readonly BodyChunk[], length: number): BodyChunk {
  if (chunks.length === 1) return chunks[0]!;
  const whole = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return whole;
}

/**
 * Every chunk of `stream`, joined, or `undefined` as soon as they pass `limit` bytes: then the
 * stream is cancelled and nothing more is read. `race` bounds each read (a deadline's race, say);
 * when a read fails, the stream is cancelled and the error rethrown.
 */
export async function readUpTo(
  stream: ReadableStream<BodyChunk>,
  limit: number,
  race: <T>(read: Promise<T>) => Promise<T> = (read) => read,
): Promise<BodyChunk | undefined> {
  const reader = stream.getReader();
  const chunks: BodyChunk[] = [];
  let length = 0;
  try {
    for (;;) {
      const { done, value } = await race(reader.read());
      if (done) return joinChunks(chunks, length);
      length += value.byteLength;
      if (length > limit) {
        reader.cancel().catch(() => {});
        return undefined;
      }
      chunks.push(value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  }
}

/**
 * Writes the chunks already read, then pipes the rest of the body after them: the whole body again,
 * as one stream. Rejects as the pipe does; `options` are the pipe's.
 */
export async function pipeAfter(consumed: readonly BodyChunk[], rest: ReadableStream<BodyChunk>, writable: WritableStream<BodyChunk>, options?: StreamPipeOptions): Promise<void> {
  const writer = writable.getWriter();
  for (const chunk of consumed) await writer.write(chunk);
  writer.releaseLock();
  await rest.pipeTo(writable, options);
}

/**
 * A stream read by this script, a chunk at a time and only as its reader asks: for one whose failure
 * must be told apart from its destination's. `failed` hears of the source's error before the stream errors.
 */
export function readByScript(source: ReadableStream<BodyChunk>, failed: () => void): ReadableStream<BodyChunk> {
  const reader = source.getReader();
  return new ReadableStream<BodyChunk>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (error) {
          failed();
          controller.error(error);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
