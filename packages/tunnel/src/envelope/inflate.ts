import type { BodyChunk, ChunkSource } from "../shared/body.ts";
import type { RawRead } from "./head.ts";
import type { HeaderLineScanner } from "./header-line.ts";

/**
 * A compressed body inflated only as far as it is read: the envelope head's reader and the spool's
 * `sent_at` shift both read a body that may be a bomb.
 *
 * workerd's decompressor inflates whatever it is written at once and buffers the output until it is
 * read, and a pipe writes ahead of the reader; so the compressed bytes go in `sliceBytes` at a time,
 * and a new slice only while a {@link read} waits for output, that is, once all that was inflated so
 * far has been taken. That is what bounds memory: deflate expands at most about 1032:1.
 *
 * The source is never cancelled, never read once {@link stop} is called, and its read still in flight
 * then is awaited, so that every chunk taken from it ends up in {@link consumed}.
 */
export class Inflater {
  /** The compressed chunks taken from the source, exactly as they came. */
  readonly consumed: BodyChunk[] = [];
  /** The source has no more chunks. */
  ended = false;
  readonly #source: ChunkSource;
  readonly #sliceBytes: number;
  readonly #output: ReadableStreamDefaultReader<BodyChunk>;
  #stopped = false;
  #inFlight: Promise<void> = Promise.resolve();
  #sourceError: { error: unknown } | undefined;
  #slicing: BodyChunk | undefined;
  #sliced = 0;
  /** A read waits for output; `#asked` settles when one next does. */
  #waiting = false;
  #ask = () => {};
  #asked = new Promise<void>((resolve) => (this.#ask = resolve));

  constructor(source: ChunkSource, format: "gzip" | "deflate", sliceBytes: number) {
    this.#source = source;
    this.#sliceBytes = sliceBytes;
    const compressed = new ReadableStream<BufferSource>(
      { pull: (controller) => (this.#waiting ? this.#feed(controller) : this.#asked.then(() => this.#feed(controller))) },
      { highWaterMark: 0 },
    );
    this.#output = compressed.pipeThrough(new DecompressionStream(format)).getReader() as ReadableStreamDefaultReader<BodyChunk>;
  }

  /** The next inflated chunk; rejects when the data is not of its format, or the source failed. */
  async read(): Promise<ReadableStreamReadResult<BodyChunk>> {
    const output = this.#output.read();
    this.#waiting = true;
    this.#ask();
    try {
      return await output;
    } finally {
      this.#waiting = false;
      this.#asked = new Promise<void>((resolve) => (this.#ask = resolve));
    }
  }

  /** Stops feeding and waits for the source's read in flight, whose chunk still belongs in `consumed`; rethrows the source's own error. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#ask();
    this.#output.cancel().catch(() => {});
    await this.#inFlight;
    if (this.#sourceError) throw this.#sourceError.error;
  }

  #feed(controller: ReadableStreamDefaultController<BufferSource>): Promise<void> | void {
    if (this.#stopped) return;
    if (this.#slicing) return this.#nextSlice(controller);
    this.#inFlight = this.#source.read().then(
      ({ done, value }) => {
        if (done) {
          this.ended = true;
          if (!this.#stopped) controller.close();
          return;
        }
        this.consumed.push(value);
        if (this.#stopped) return;
        // Even an empty chunk is passed on: a pull that enqueues nothing is not called again.
        this.#slicing = value;
        this.#sliced = 0;
        this.#nextSlice(controller);
      },
      (error: unknown) => {
        this.#sourceError = { error };
        if (!this.#stopped) controller.error(error);
      },
    );
    return this.#inFlight;
  }

  #nextSlice(controller: ReadableStreamDefaultController<BufferSource>): void {
    const chunk = this.#slicing!;
    const end = Math.min(this.#sliced + this.#sliceBytes, chunk.byteLength);
    controller.enqueue(chunk.subarray(this.#sliced, end));
    this.#sliced = end;
    if (this.#sliced >= chunk.byteLength) this.#slicing = undefined;
  }
}

/**
 * Compressed bytes handed to the decompressor at a time: one slice inflates to at most some
 * 16.5 KiB, so a bomb gets no further than a few slices ahead of the line scanner before it has
 * looked at the output and said stop.
 */
const INFLATE_SLICE_BYTES = 16;

/** Inflates the body only as far as the header line needs; the compressed bytes read are kept for forwarding. */
export async function scanCompressedHead(reader: ChunkSource, line: HeaderLineScanner, format: "gzip" | "deflate"): Promise<RawRead> {
  const inflater = new Inflater(reader, format, INFLATE_SLICE_BYTES);
  let corrupt = false;
  try {
    while (line.state === "reading") {
      const { done, value } = await inflater.read();
      if (done) break;
      line.push(value);
    }
  } catch {
    corrupt = true;
  } finally {
    await inflater.stop();
  }
  return { consumed: inflater.consumed, ended: inflater.ended, corrupt };
}
