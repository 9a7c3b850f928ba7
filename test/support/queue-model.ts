/**
 * `npm run bench:spool`'s stand-ins for what cannot run here at scale: a Cloudflare Queue that
 * enforces the published limits (`../shared/platform-facts.md`, and the Queues limits page), R2,
 * and Sentry, all on a virtual clock. The tunnel's own code runs against them unchanged.
 *
 * Each simulated message stands for `weight` real ones, as an Analytics Engine row stands for its
 * `_sample_interval`: the limits (writes a second, backlog bytes) and the operations priced are
 * counted in real messages, so 1,000 envelopes a second can be simulated as 50.
 */

/** Cloudflare Queues' published limits, per queue. */
export const QUEUE_LIMITS = {
  writesPerSecond: 5_000,
  backlogBytes: 25e9,
  /** A message, including about 100 bytes of the queue's metadata. */
  messageBytes: 128_000,
  batchMessages: 100,
  maxRetries: 100,
  maxDelaySeconds: 43_200,
  consumerConcurrency: 250,
  /** One operation per 64 KB written, read or deleted. */
  operationBytes: 64 * 1024,
} as const;

export interface Clock {
  now(): number;
}

interface Stored {
  id: string;
  body: unknown;
  bytes: number;
  due: number;
  attempts: number;
  timestamp: number;
}

/** The stored messages by when they are due, earliest first; an entry whose message has since moved is skipped. */
class DueHeap {
  readonly #entries: { due: number; message: Stored }[] = [];

  push(message: Stored): void {
    const entries = this.#entries;
    entries.push({ due: message.due, message });
    for (let at = entries.length - 1; at > 0; ) {
      const parent = (at - 1) >> 1;
      if (entries[parent]!.due <= entries[at]!.due) break;
      [entries[parent], entries[at]] = [entries[at]!, entries[parent]!];
      at = parent;
    }
  }

  /** The earliest message due by `now` that is still stored and still due then, or `undefined`. */
  popDue(now: number, stored: ReadonlyMap<string, Stored>): Stored | undefined {
    const entries = this.#entries;
    while (entries.length > 0 && entries[0]!.due <= now) {
      const { due, message } = this.#pop();
      if (stored.get(message.id) === message && message.due === due) return message;
    }
    return undefined;
  }

  #pop(): { due: number; message: Stored } {
    const entries = this.#entries;
    const top = entries[0]!;
    const last = entries.pop()!;
    if (entries.length > 0) {
      entries[0] = last;
      for (let at = 0; ; ) {
        const left = 2 * at + 1;
        const right = left + 1;
        let least = at;
        if (left < entries.length && entries[left]!.due < entries[least]!.due) least = left;
        if (right < entries.length && entries[right]!.due < entries[least]!.due) least = right;
        if (least === at) break;
        [entries[least], entries[at]] = [entries[at]!, entries[least]!];
        at = least;
      }
    }
    return top;
  }
}

/** What the model counts, in real messages and operations. */
export interface QueueCounts {
  writes: number;
  /** Writes refused: over the write rate or the backlog. */
  refusedWrites: number;
  operations: number;
  deliveries: number;
  peakWritesPerSecond: number;
  peakBacklogBytes: number;
  deadLettered: number;
}

/** The queue's size of a message: its body as the structured clone carries it, and the queue's 100 bytes. */
function messageBytes(body: unknown): number {
  const value = body as { body?: Uint8Array } & Record<string, unknown>;
  const inline = value.body instanceof Uint8Array ? value.body.byteLength : 0;
  return inline + JSON.stringify({ ...value, body: undefined }).length + 100;
}

const operationsOf = (bytes: number) => Math.max(1, Math.ceil(bytes / QUEUE_LIMITS.operationBytes));

/** A queue, its consumer's batches, and its dead-letter queue's count, as Cloudflare documents them. */
export class ModelQueue {
  readonly counts: QueueCounts = { writes: 0, refusedWrites: 0, operations: 0, deliveries: 0, peakWritesPerSecond: 0, peakBacklogBytes: 0, deadLettered: 0 };
  /** In the order written: the first is the oldest. */
  readonly #stored = new Map<string, Stored>();
  readonly #due = new DueHeap();
  readonly #clock: Clock;
  readonly #weight: number;
  readonly #maxRetries: number;
  #second = -1;
  #writesThisSecond = 0;
  #backlogBytes = 0;
  #nextId = 0;

  constructor(clock: Clock, weight: number, maxRetries: number) {
    this.#clock = clock;
    this.#weight = weight;
    this.#maxRetries = maxRetries;
  }

  /** The binding's `send`, with `metadata.metrics` in its result as the current workers-types declare. */
  async send(body: unknown, options?: QueueSendOptions): Promise<{ metadata: { metrics: QueueMetrics } }> {
    this.#write(body, options?.delaySeconds ?? 0);
    return { metadata: { metrics: this.metricsNow() } };
  }

  async sendBatch(messages: Iterable<MessageSendRequest<unknown>>, options?: QueueSendBatchOptions): Promise<{ metadata: { metrics: QueueMetrics } }> {
    for (const message of messages) this.#write(message.body, message.delaySeconds ?? options?.delaySeconds ?? 0);
    return { metadata: { metrics: this.metricsNow() } };
  }

  async metrics(): Promise<QueueMetrics> {
    return this.metricsNow();
  }

  metricsNow(): QueueMetrics {
    const oldest = this.#stored.values().next().value?.timestamp;
    return { backlogCount: this.#stored.size * this.#weight, backlogBytes: this.#backlogBytes, ...(oldest === undefined ? {} : { oldestMessageTimestamp: new Date(oldest) }) };
  }

  get backlog(): number {
    return this.#stored.size * this.#weight;
  }

  #write(body: unknown, delaySeconds: number): void {
    const now = this.#clock.now();
    const second = Math.floor(now / 1000);
    if (second !== this.#second) {
      this.#second = second;
      this.#writesThisSecond = 0;
    }
    const bytes = messageBytes(body);
    if (bytes > QUEUE_LIMITS.messageBytes) throw new Error(`Message too large: ${bytes} bytes`);
    if (delaySeconds > QUEUE_LIMITS.maxDelaySeconds) throw new Error(`delaySeconds over ${QUEUE_LIMITS.maxDelaySeconds}`);
    if (this.#writesThisSecond + this.#weight > QUEUE_LIMITS.writesPerSecond) {
      this.counts.refusedWrites += this.#weight;
      throw new Error("Too Many Requests: over the queue's 5,000 writes a second");
    }
    if (this.#backlogBytes + bytes * this.#weight > QUEUE_LIMITS.backlogBytes) {
      this.counts.refusedWrites += this.#weight;
      throw new Error("Storage Limit Exceeded: the queue's backlog is over 25 GB");
    }
    this.#writesThisSecond += this.#weight;
    this.counts.writes += this.#weight;
    this.counts.peakWritesPerSecond = Math.max(this.counts.peakWritesPerSecond, this.#writesThisSecond);
    this.counts.operations += operationsOf(bytes) * this.#weight;
    this.#backlogBytes += bytes * this.#weight;
    this.counts.peakBacklogBytes = Math.max(this.counts.peakBacklogBytes, this.#backlogBytes);
    const id = String(this.#nextId++);
    const message = { id, body: structuredClone(body), bytes, due: now + delaySeconds * 1000, attempts: 0, timestamp: now };
    this.#stored.set(id, message);
    this.#due.push(message);
  }

  /**
   * The next batch due, as the consumer gets it, or `undefined`: each delivery a read, an ack a
   * delete, a retry a delivery later; a message past `maxRetries` goes to the dead-letter queue.
   * A handler that throws has every message it did not settle retried; one that returns, acked.
   */
  nextBatch(queueName: string, size: number): { batch: MessageBatch<unknown>; settle: (threw: boolean) => void } | undefined {
    const now = this.#clock.now();
    const due: Stored[] = [];
    for (let message = this.#due.popDue(now, this.#stored); message; message = due.length < size ? this.#due.popDue(now, this.#stored) : undefined) due.push(message);
    if (due.length === 0) return undefined;
    const settled = new Set<string>();
    const remove = (message: Stored) => {
      this.#stored.delete(message.id);
      this.#backlogBytes -= message.bytes * this.#weight;
    };
    const retry = (message: Stored, delaySeconds = 0) => {
      if (message.attempts > this.#maxRetries) {
        remove(message);
        this.counts.deadLettered += this.#weight;
        return;
      }
      message.due = now + Math.min(delaySeconds, QUEUE_LIMITS.maxDelaySeconds) * 1000;
      this.#due.push(message);
    };
    const messages = due.map((stored) => {
      stored.attempts += 1;
      // Out of the queue until it is settled, as an in-flight message is.
      stored.due = Number.POSITIVE_INFINITY;
      this.counts.deliveries += this.#weight;
      this.counts.operations += operationsOf(stored.bytes) * this.#weight;
      return {
        id: stored.id,
        timestamp: new Date(stored.timestamp),
        body: structuredClone(stored.body),
        attempts: stored.attempts,
        ack: () => {
          if (settled.has(stored.id)) return;
          settled.add(stored.id);
          this.counts.operations += operationsOf(stored.bytes) * this.#weight;
          remove(stored);
        },
        retry: (options?: QueueRetryOptions) => {
          if (settled.has(stored.id)) return;
          settled.add(stored.id);
          retry(stored, options?.delaySeconds ?? 0);
        },
      };
    });
    const batch = {
      queue: queueName,
      messages,
      metadata: { metrics: this.metricsNow() },
      retryAll: (options?: QueueRetryOptions) => messages.forEach((message) => message.retry(options)),
      ackAll: () => messages.forEach((message) => message.ack()),
    } as unknown as MessageBatch<unknown>;
    const settle = (threw: boolean) => {
      for (const message of messages) if (!settled.has(message.id)) (threw ? message.retry : message.ack)();
    };
    return { batch, settle };
  }
}

/**
 * A Workers Rate Limiting binding of one location, as the spool's byte budgets use it: `limit`
 * calls a window, each simulated call standing for `weight` real ones.
 */
export class ModelLimiter {
  refused = 0;
  readonly #clock: Clock;
  readonly #periodMs: number;
  readonly #limit: number;
  readonly #weight: number;
  #window = -1;
  #count = 0;

  constructor(clock: Clock, { limit, period }: { limit: number; period: number }, weight: number) {
    this.#clock = clock;
    this.#periodMs = period * 1000;
    this.#limit = limit;
    this.#weight = weight;
  }

  async limit(_options: { key: string }): Promise<{ success: boolean }> {
    const window = Math.floor(this.#clock.now() / this.#periodMs);
    if (window !== this.#window) {
      this.#window = window;
      this.#count = 0;
    }
    if (this.#count + this.#weight > this.#limit) {
      this.refused += this.#weight;
      return { success: false };
    }
    this.#count += this.#weight;
    return { success: true };
  }
}

/** R2 as the spool uses it: put, get, delete, with Class A and Class B operations counted. */
export class ModelBucket {
  readonly counts = { classA: 0, classB: 0, objects: 0 };
  readonly #objects = new Map<string, Uint8Array>();
  readonly #weight: number;

  constructor(weight: number) {
    this.#weight = weight;
  }

  async put(key: string, value: ReadableStream | Uint8Array): Promise<object> {
    const bytes = value instanceof Uint8Array ? value : new Uint8Array(await new Response(value).arrayBuffer());
    this.#objects.set(key, bytes);
    this.counts.classA += this.#weight;
    this.counts.objects = this.#objects.size;
    return {};
  }

  async get(key: string): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null> {
    this.counts.classB += this.#weight;
    const bytes = this.#objects.get(key);
    return bytes ? { arrayBuffer: async () => bytes.slice().buffer } : null;
  }

  async delete(key: string): Promise<void> {
    this.#objects.delete(key);
    this.counts.objects = this.#objects.size;
  }
}

/** How Sentry answers, minute by minute: down, then back, with spike protection per project. */
export interface SentryModel {
  /** When Sentry is down (ms on the virtual clock), and how: fast 503s, or a connection that never answers. */
  outage: { from: number; to: number; kind: "fast-5xx" | "hang" };
  /** Each project's usual envelopes a minute, before the outage: spike protection compares with it. */
  usualPerMinute: ReadonlyMap<string, number>;
  /** Above this many times its usual rate in a minute, a project is refused 429 (Retry-After 60) for the rest of the minute. */
  spikeFactor: number;
}

/** Sentry's per-project record in the model: what it took each minute. */
export class ModelSentry {
  readonly takenPerMinute = new Map<string, Map<number, number>>();
  readonly delivered = new Map<string, number>();
  spikeRefusals = 0;
  requests = 0;
  readonly #model: SentryModel;
  readonly #clock: Clock;
  readonly #weight: number;
  /** Virtual ms each answer takes; a hung request takes the tunnel's whole deadline, counted by the driver. */
  hung = 0;

  constructor(model: SentryModel, clock: Clock, weight: number) {
    this.#model = model;
    this.#clock = clock;
    this.#weight = weight;
  }

  readonly fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    this.requests += 1;
    const url = String(input instanceof Request ? input.url : input);
    const body = new Uint8Array(await new Response(init?.body ?? (input instanceof Request ? input.body : null)).arrayBuffer());
    const now = this.#clock.now();
    const { outage } = this.#model;
    if (now >= outage.from && now < outage.to) {
      if (outage.kind === "fast-5xx") return new Response("upstream unavailable", { status: 503 });
      this.hung += 1;
      const signal = init?.signal ?? undefined;
      return new Promise<Response>((_resolve, reject) => signal?.addEventListener("abort", () => reject(signal.reason)));
    }
    const project = /\/api\/(\d+)\//.exec(url)?.[1] ?? "?";
    const text = new TextDecoder().decode(body.subarray(0, 400));
    if (text.includes('{"type":"client_report"}')) return Response.json({});
    const minute = Math.floor(now / 60_000);
    const perMinute = this.takenPerMinute.get(project) ?? new Map<number, number>();
    this.takenPerMinute.set(project, perMinute);
    const usual = this.#model.usualPerMinute.get(project) ?? Number.POSITIVE_INFINITY;
    if ((perMinute.get(minute) ?? 0) + this.#weight > usual * this.#model.spikeFactor) {
      this.spikeRefusals += this.#weight;
      return new Response("", { status: 429, headers: { "retry-after": "60", "x-sentry-rate-limits": "60::project" } });
    }
    perMinute.set(minute, (perMinute.get(minute) ?? 0) + this.#weight);
    const id = /"event_id":"([0-9a-f]+)"/.exec(text)?.[1];
    if (id) this.delivered.set(id, (this.delivered.get(id) ?? 0) + 1);
    return Response.json({ id });
  }) as typeof fetch;
}
