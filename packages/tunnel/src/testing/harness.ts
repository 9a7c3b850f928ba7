/**
 * The harness behind `@edge-monitoring/tunnel/testing` (`testing.ts` exports what adopters use) and
 * the package's own tests, which use all of it.
 */
import { notFoundSentence } from "../stages/admit.ts";
import { tunnelAnswer } from "../stages/answers.ts";
import { compressedBodies } from "../compressed.ts";
import { cspReports } from "../csp.ts";
import type { TunnelOptions } from "../setup/options.ts";
import type { LogLine } from "../stages/log-line.ts";
import { ConfigError } from "../shared/variables.ts";
import { spool, type SpoolOptions } from "../spool.ts";
import type { SpooledEnvelope } from "../spool/store.ts";
import { createTunnel } from "../setup/worker.ts";

export { TUNNEL_ANSWERS, type TunnelAnswerCode } from "../stages/answers.ts";

/** A DSN of Sentry's SaaS form, for tests: organisation 4501, project 4502, the US region. */
export const TEST_DSN = "https://0123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/4502";
/** Another project of the same organisation. */
export const OTHER_TEST_DSN = "https://fedcba9876543210fedcba9876543210@o4501.ingest.us.sentry.io/4503";
/** The original route, with the query that names {@link TEST_DSN}'s project: where {@link tunnelUnderTest} posts by default. */
export const TEST_TUNNEL = "/monitoring?o=4501&p=4502&r=us";
/** Sentry's answer to an envelope it took. */
export const SENTRY_OK = { id: "0123456789abcdef0123456789abcdef" };

const encoder = new TextEncoder();

export interface EnvelopeSpec {
  dsn?: string;
  eventId?: string;
  sentAt?: Date;
  /** The items, as written after the header line. Default: one event. */
  items?: string | Uint8Array;
  /** Instead of `items`: one attachment of this many random bytes (binary, like a replay). */
  attachmentBytes?: number;
}

/** An envelope as an SDK writes it: a header line with the DSN and a fresh event id, then the items. */
export function envelope({ dsn = TEST_DSN, eventId, sentAt, items, attachmentBytes }: EnvelopeSpec = {}): { id: string; body: Uint8Array<ArrayBuffer> } {
  const id = eventId ?? crypto.randomUUID().replaceAll("-", "");
  const header = encoder.encode(`${JSON.stringify({ dsn, event_id: id, ...(sentAt ? { sent_at: sentAt.toISOString() } : {}) })}\n`);
  let rest: Uint8Array;
  if (attachmentBytes !== undefined) {
    const itemHeader = encoder.encode(`{"type":"attachment","length":${attachmentBytes}}\n`);
    rest = new Uint8Array(itemHeader.length + attachmentBytes + 1);
    rest.set(itemHeader);
    const attachment = rest.subarray(itemHeader.length, itemHeader.length + attachmentBytes);
    for (let at = 0; at < attachmentBytes; at += 65_536) crypto.getRandomValues(attachment.subarray(at, at + 65_536));
    rest[rest.length - 1] = 0x0a;
  } else {
    rest = typeof items === "string" ? encoder.encode(items) : (items ?? encoder.encode(`{"type":"event"}\n${JSON.stringify({ event_id: id, message: "hello" })}\n`));
  }
  const body = new Uint8Array(header.byteLength + rest.byteLength);
  body.set(header);
  body.set(rest, header.byteLength);
  return { id, body };
}

export interface EnvelopeHeader {
  dsn?: string;
  event_id?: string;
  sent_at?: string;
  [key: string]: unknown;
}

/** The header line of an envelope, parsed. */
export function headerOf(body: Uint8Array): EnvelopeHeader {
  const newline = body.indexOf(0x0a);
  return JSON.parse(new TextDecoder().decode(body.subarray(0, newline === -1 ? body.length : newline))) as EnvelopeHeader;
}

/** What the stub Sentry was sent: the request as the tunnel made it, and its body read whole. */
export interface Took {
  url: string;
  headers: Headers;
  body: Uint8Array<ArrayBuffer>;
}

/** How Sentry answers one request; by default, 200 with its usual JSON. */
export type SentryAnswer = (took: Took) => Response | Promise<Response>;

/**
 * Sentry as a stub `fetch` that behaves as the runtime's does: it reads the body whole, keeps it,
 * and answers as `answer` says; an abort (the tunnel's deadline) fails it at any point, and a body
 * that fails, fails it. A test swaps `answer` to have Sentry fail, stall or refuse.
 */
export class StubSentry {
  readonly took: Took[] = [];
  answer: SentryAnswer = () => Response.json(SENTRY_OK);
  /** Requests that reached the stub, even those whose body never ended. */
  arrivals = 0;

  readonly fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    this.arrivals += 1;
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    const aborted = new Promise<never>((_resolve, reject) => {
      if (signal?.aborted) reject(signal.reason);
      signal?.addEventListener("abort", () => reject(signal.reason));
    });
    aborted.catch(() => {});
    const request = input instanceof Request ? input : new Request(input, { ...init, signal: null });
    const body = new Uint8Array(await Promise.race([request.arrayBuffer(), aborted]));
    const took: Took = { url: request.url, headers: request.headers, body };
    this.took.push(took);
    return Promise.race([this.answer(took), aborted]);
  }) as typeof globalThis.fetch;

  /** The envelopes Sentry took, but the client reports the tunnel sent of its own. */
  envelopes(): Took[] {
    return this.took.filter((took) => !isClientReport(took.body));
  }

  /** The `discarded_events` of each client report Sentry was sent. */
  clientReports(): unknown[] {
    return this.took.filter((took) => isClientReport(took.body)).map((took) => {
      const lines = new TextDecoder().decode(took.body).split("\n");
      return (JSON.parse(lines[2]!) as { discarded_events: unknown }).discarded_events;
    });
  }
}

function isClientReport(body: Uint8Array): boolean {
  return new TextDecoder().decode(body.subarray(0, 2_000)).includes('{"type":"client_report"');
}

/** An answer that never comes: the tunnel's deadline ends the wait, as with a stalled socket. */
export const neverAnswers: SentryAnswer = () => new Promise<never>(() => {});

export interface TunnelUnderTest {
  tunnel: ReturnType<typeof createTunnel>;
  sentry: StubSentry;
  /** What the tunnel sent to its queue, in order. */
  stored: SpooledEnvelope[];
  lines: LogLine[];
  /** POSTs `body` to `path` (default: the original route): a byte array with its length declared, as browsers send it. */
  post(body: Uint8Array | ReadableStream<Uint8Array>, headers?: Record<string, string>, path?: string): Promise<Response>;
  /** Any request to the tunnel, at a path of this origin; a path it leaves to its host is answered `not_found`. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
}

/** A rate limiter that never says no. */
export const EVERY_CLIENT: Pick<RateLimit, "limit"> = { limit: async () => ({ success: true }) };

/**
 * A tunnel's options as `createTunnel` takes them, but for `spool`: the spool's own options
 * (`spool({ … })`'s), or `false` for a tunnel without one.
 */
export type TestTunnelOptions = Omit<Partial<TunnelOptions>, "spool"> & { spool?: Partial<SpoolOptions> | false };

/**
 * The tunnel with every capability, Sentry the stub, and `options` over these: the test DSN,
 * limiters and spool budgets that let every client through (none when `limiter` is `"off"`), a
 * dataset that keeps no data point, and a spool whose queue keeps its messages in `stored`.
 */
export function tunnelUnderTest(options: TestTunnelOptions = {}): TunnelUnderTest {
  const sentry = new StubSentry();
  const stored: SpooledEnvelope[] = [];
  const lines: LogLine[] = [];
  const { spool: spoolOptions = {}, ...given } = options;
  const budgets = given.limiter === "off" ? {} : { clientBudget: EVERY_CLIENT, totalBudget: EVERY_CLIENT };
  const queue = { send: async (message: SpooledEnvelope) => void stored.push(structuredClone(message)) };
  const tunnel = createTunnel(
    {
      dsn: TEST_DSN,
      limiter: EVERY_CLIENT,
      analytics: { writeDataPoint: () => {} },
      cspReports: cspReports(),
      compressedBodies: compressedBodies(),
      ...given,
      spool: spoolOptions === false ? undefined : spool({ queue, ...budgets, ...spoolOptions }),
    },
    { fetch: sentry.fetch, log: (line) => void lines.push(line) },
  );
  // A path the tunnel leaves to its host is answered as the tunnel refuses a path it does not serve.
  const fetch = async (path: string, init?: RequestInit) => {
    const request = new Request(`https://app.example${path}`, init);
    return (await tunnel.handle(request)) ?? tunnelAnswer("not_found", undefined, notFoundSentence(new URL(request.url).pathname)).response;
  };
  const post = (body: Uint8Array | ReadableStream<Uint8Array>, headers: Record<string, string> = {}, path = TEST_TUNNEL) =>
    fetch(path, {
      method: "POST",
      body,
      headers: { "cf-connecting-ip": "198.18.0.1", ...(body instanceof Uint8Array ? { "content-length": String(body.byteLength) } : {}), ...headers },
    });
  return { tunnel, sentry, stored, lines, post, fetch };
}

interface Polling {
  /** How often to ask: a condition that itself sends requests can ask to be polled less often than every 20 ms. */
  pollMs?: number;
  /** What to say, when it gives up, of the state the condition looked at: the counts it compared, say. */
  saw?: () => unknown;
}

/**
 * Waits for a condition to become true, polling; fails after `timeoutMs`, saying what the condition
 * was and what `saw` reports of the state it last looked at. A condition that throws fails the wait
 * at once. A wait in a test is one of these, never a fixed sleep.
 */
export async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000, { pollMs = 20, saw }: Polling = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      const said = [`condition not met within ${timeoutMs} ms: ${condition.toString()}`];
      if (saw) said.push(`last seen: ${JSON.stringify(saw())}`);
      throw new Error(said.join("\n"));
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** What a setting's reader refused: the variable or option it names, and what it says; `undefined` when nothing was refused. */
export function configRefusal(read: () => unknown): { variable: string; message: string } | undefined {
  try {
    read();
  } catch (error) {
    if (error instanceof ConfigError) return { variable: error.variable, message: error.message };
    throw error;
  }
  return undefined;
}
