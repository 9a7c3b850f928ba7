/** A chunk of a request body: always backed by a plain ArrayBuffer. */
export type BodyChunk = Uint8Array<ArrayBuffer>;

/** Where the body's chunks come from: a stream's reader, or a body already read whole. */
export type ChunkSource = Pick<ReadableStreamDefaultReader<BodyChunk>, "read">;

/** A body read whole, offered as one chunk. */
export function wholeBody(bytes: BodyChunk): ChunkSource {
  let given = false;
  return {
    read: async () => {
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
