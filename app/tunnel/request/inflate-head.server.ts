import type { BodyChunk, ChunkSource } from "../shared/body.server";
import type { HeaderLineScanner } from "./header-line.server";

/**
 * Compressed bytes handed to the decompressor at a time. Deflate expands at most about 1032:1, so
 * one slice inflates to at most some 16.5 KiB, and a bomb gets no further than a few slices ahead
 * of the line scanner before it has looked at the output and said stop.
 */
const INFLATE_SLICE_BYTES = 16;

export interface RawRead {
  consumed: BodyChunk[];
  ended: boolean;
  /** The compressed data could not be decompressed as far as the end of the line. */
  corrupt?: boolean;
}

/**
 * Feeds the compressed chunks through a DecompressionStream until the line is complete, so that
 * only as much is inflated as the line needs.
 *
 * workerd's decompressor inflates whatever it is written at once and buffers the output until it is
 * read, and a pipe writes ahead of the reader; so the compressed bytes go in
 * {@link INFLATE_SLICE_BYTES} at a time, and a new slice only while the scanner is waiting for
 * output, that is, has taken all that was inflated so far. That is what bounds memory.
 *
 * The feeding source never cancels `reader`, never reads from it once scanning stopped, and its read
 * still in flight when scanning stops is awaited, so that every chunk taken from `reader` ends up in
 * `consumed`.
 */
export async function scanDecompressed(
  reader: ChunkSource,
  line: HeaderLineScanner,
  format: "gzip" | "deflate",
): Promise<RawRead> {
  const feeder = new SliceFeeder(reader);
  const decompressed = feeder.stream.pipeThrough(new DecompressionStream(format)).getReader();
  let corrupt = false;
  try {
    while (line.state === "reading") {
      const output = decompressed.read();
      feeder.scannerWaits();
      const { done, value } = await output;
      feeder.scannerBusy();
      if (done) break;
      line.push(value);
    }
  } catch {
    corrupt = true;
  } finally {
    // Stopped before the cancel reaches the feeder, as the feeder's own reads must see.
    const stopped = feeder.stop();
    decompressed.cancel().catch(() => {});
    await stopped;
  }
  return { consumed: feeder.consumed, ended: feeder.ended, corrupt };
}

/**
 * The compressed side: a stream that takes a chunk from the body only when pulled while the
 * scanner waits, and hands it on in slices of {@link INFLATE_SLICE_BYTES}.
 */
class SliceFeeder {
  readonly consumed: BodyChunk[] = [];
  ended = false;
  readonly stream: ReadableStream<BufferSource>;
  #stopped = false;
  #inFlight: Promise<void> = Promise.resolve();
  #clientError: { error: unknown } | undefined;
  #slicing: BodyChunk | undefined;
  #sliced = 0;
  /** The scanner is waiting for output; `#asked` settles when it next is. */
  #waiting = false;
  #ask = () => {};
  #asked = new Promise<void>((resolve) => (this.#ask = resolve));

  constructor(private readonly reader: ChunkSource) {
    this.stream = new ReadableStream<BufferSource>(
      { pull: (controller) => (this.#waiting ? this.#feed(controller) : this.#asked.then(() => this.#feed(controller))) },
      { highWaterMark: 0 },
    );
  }

  scannerWaits(): void {
    this.#waiting = true;
    this.#ask();
  }

  scannerBusy(): void {
    this.#waiting = false;
    this.#asked = new Promise<void>((resolve) => (this.#ask = resolve));
  }

  /** Stops feeding and waits for the read in flight, whose chunk still belongs in `consumed`; rethrows the body's own error. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#ask();
    await this.#inFlight;
    if (this.#clientError) throw this.#clientError.error;
  }

  #feed(controller: ReadableStreamDefaultController<BufferSource>): Promise<void> | void {
    if (this.#stopped) return;
    if (this.#slicing) return this.#nextSlice(controller);
    this.#inFlight = this.reader.read().then(
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
        this.#clientError = { error };
        if (!this.#stopped) controller.error(error);
      },
    );
    return this.#inFlight;
  }

  #nextSlice(controller: ReadableStreamDefaultController<BufferSource>): void {
    const chunk = this.#slicing!;
    const end = Math.min(this.#sliced + INFLATE_SLICE_BYTES, chunk.byteLength);
    controller.enqueue(chunk.subarray(this.#sliced, end));
    this.#sliced = end;
    if (this.#sliced >= chunk.byteLength) this.#slicing = undefined;
  }
}
