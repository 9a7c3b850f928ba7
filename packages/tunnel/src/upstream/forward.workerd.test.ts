import { describe, expect, it, vi } from "vitest";

import { Deadline } from "../shared/deadline.ts";
import type { BodyChunk } from "../shared/body.ts";
import { forwardEnvelope } from "./forward.ts";

/**
 * `forwardEnvelope` where it runs: in workerd (through Cloudflare's vitest integration), where its
 * streams are workerd's own (`FixedLengthStream`, `IdentityTransformStream`) and an upload whose
 * stream errors is ended as workerd ends it. Sentry is a stub `fetch` that behaves as the
 * runtime's does with a request body: it reads the stream, and an abort cancels it. No socket.
 */
/** What the stub Sentry saw of one request, in order: `aborted`, then the body `ended`, `errored` or was `cancelled`. */
interface SentrySaw {
  events: string[];
  bytes: number;
  text: string;
}

/**
 * Sentry answering `answer` once it has read the whole body. As the runtime's `fetch`, it fails
 * when the request is aborted (and cancels the body) or when the body fails.
 */
function stubSentry(answer: () => Response | Promise<Response>) {
  const saw: SentrySaw = { events: [], bytes: 0, text: "" };
  let bodyRead: Promise<void> = Promise.resolve();
  const fetch = (async (_url: RequestInfo | URL, init?: RequestInit) => {
    const signal = init!.signal!;
    const reader = new Response(init!.body).body!.getReader() as ReadableStreamDefaultReader<BodyChunk>;
    const aborted = new Promise<never>((_, reject) => {
      signal.addEventListener("abort", () => {
        saw.events.push("aborted");
        reader.cancel(signal.reason).catch(() => {});
        reject(signal.reason);
      });
    });
    aborted.catch(() => {});
    bodyRead = (async () => {
      const decoder = new TextDecoder();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return void saw.events.push(signal.aborted ? "body cancelled" : "body ended");
          saw.bytes += value.byteLength;
          saw.text += decoder.decode(value, { stream: true });
        }
      } catch {
        saw.events.push("body errored");
        throw new TypeError("The request's body failed");
      }
    })();
    bodyRead.catch(() => {});
    await Promise.race([bodyRead, aborted]);
    return Promise.race([answer(), aborted]);
  }) as typeof globalThis.fetch;
  return { fetch, saw, bodySettled: () => bodyRead };
}

const encoder = new TextEncoder();
const bytes = (text: string) => encoder.encode(text) as BodyChunk;

/** A client's body after its first bytes: `chunks`, then it ends, fails or stalls. */
function clientBody(chunks: string[], then: "end" | "error" | "stall" = "end"): ReadableStream<BodyChunk> {
  const queue = chunks.map(bytes);
  return new ReadableStream<BodyChunk>({
    pull(controller) {
      const next = queue.shift();
      if (next) return controller.enqueue(next);
      if (then === "end") return controller.close();
      if (then === "error") return controller.error(new TypeError("The client went away"));
      return new Promise<void>(() => {});
    },
  });
}

const ok = () => Response.json({ id: "0123456789abcdef0123456789abcdef" });
const HEAD = '{"dsn":"https://k@o1.ingest.sentry.io/2"}\n';

interface Forwarding {
  rest: ReadableStream<BodyChunk> | undefined;
  contentLength: number | undefined;
  maxBytes?: number;
  deadlineMs?: number;
  answer?: () => Response | Promise<Response>;
}

/** One forward of `HEAD` (already read) and `rest`, and what came of it on both sides. */
async function forward({ rest, contentLength, maxBytes = 1_000_000, deadlineMs = 5_000, answer = ok }: Forwarding) {
  const sentry = stubSentry(answer);
  const deadline = new Deadline(deadlineMs);
  try {
    const result = await forwardEnvelope({
      url: "https://o1.ingest.sentry.io/api/2/envelope/",
      headers: { "content-type": "application/x-sentry-envelope" },
      consumed: [bytes(HEAD)],
      consumedBytes: HEAD.length,
      rest,
      contentLength,
      maxBytes,
      deadline,
      fetch: sentry.fetch,
    });
    const deadlineThen = deadline.state;
    const answered = result.ok ? { status: result.answer.status, body: result.answer.body && new TextDecoder().decode(result.answer.body) } : undefined;
    // What Sentry's side saw, once its reading of the body has settled one way or the other.
    await sentry.bodySettled().catch(() => {});
    return { ok: result.ok, reason: result.ok ? null : result.reason, answered, bytes: result.bytes, sentry: sentry.saw, deadlineThen };
  } finally {
    deadline.end();
  }
}

const REST = ["event item one\n", "event item two\n"];
const WHOLE_LENGTH = HEAD.length + REST.join("").length;

const CASES = {
  declaredLength: () => forward({ rest: clientBody(REST), contentLength: WHOLE_LENGTH }),
  unknownLength: () => forward({ rest: clientBody(REST), contentLength: undefined }),
  bodyInHand: () => forward({ rest: undefined, contentLength: HEAD.length }),
  unknownLengthPastTheMaximum: () => forward({ rest: clientBody(["x".repeat(1_000), "x".repeat(1_000)]), contentLength: undefined, maxBytes: 1_500 }),
  clientGoesAway: () => forward({ rest: clientBody(REST, "error"), contentLength: WHOLE_LENGTH + 100 }),
  clientGoesAwayUnknownLength: () => forward({ rest: clientBody(REST, "error"), contentLength: undefined }),
  clientStalls: () => forward({ rest: clientBody(REST, "stall"), contentLength: WHOLE_LENGTH + 100, deadlineMs: 200 }),
  sentryTooSlow: () => forward({ rest: clientBody(REST), contentLength: WHOLE_LENGTH, deadlineMs: 200, answer: () => new Promise<Response>(() => {}) }),
  refused: () => forward({ rest: undefined, contentLength: HEAD.length, answer: () => Response.json({ detail: "invalid envelope" }, { status: 400 }) }),
  refusalStalls: () =>
    forward({
      rest: clientBody(REST),
      contentLength: WHOLE_LENGTH,
      deadlineMs: 200,
      answer: () => new Response(new ReadableStream({ pull: () => new Promise<void>(() => {}) }), { status: 400 }),
    }),
  refusalTooLargeDeclared: () =>
    forward({ rest: undefined, contentLength: HEAD.length, answer: () => new Response("x".repeat(70 * 1024), { status: 400, headers: { "content-length": String(70 * 1024) } }) }),
  refusalTooLargeStreamed: () =>
    forward({ rest: undefined, contentLength: HEAD.length, answer: () => new Response(clientBody(["x".repeat(40 * 1024), "x".repeat(40 * 1024)]), { status: 400 }) }),
  redirect: () => forward({ rest: undefined, contentLength: HEAD.length, answer: () => new Response(null, { status: 302, headers: { location: "https://elsewhere.example/" } }) }),
  unreachable: () =>
    forward({
      rest: undefined,
      contentLength: HEAD.length,
      answer: () => {
        throw new TypeError("Network connection lost");
      },
    }),
};

const run = (name: keyof typeof CASES) => CASES[name]();
const WHOLE = `${HEAD}${REST.join("")}`;

describe("forwardEnvelope, in workerd, with Sentry a stub fetch", () => {
  it.each(["declaredLength", "unknownLength"] as const)("sends the bytes already read, then the rest, whole and in order (%s)", async (name) => {
    const forwarded = await run(name);
    expect(forwarded).toMatchObject({ ok: true, reason: null, answered: { status: 200 }, bytes: WHOLE.length });
    expect(forwarded.sentry).toEqual({ events: ["body ended"], bytes: WHOLE.length, text: WHOLE });
  });

  it("sends a body in hand as it is", async () => {
    expect(await run("bodyInHand")).toMatchObject({ ok: true, bytes: HEAD.length, sentry: { events: ["body ended"], text: HEAD } });
  });

  // workerd ends a chunked upload whose stream errors as if it had finished: the request must be
  // aborted before its body fails, or Sentry takes half an envelope for a whole one.
  it.each([
    ["unknownLengthPastTheMaximum", "envelope_too_large"],
    ["clientGoesAway", "body_incomplete"],
    ["clientGoesAwayUnknownLength", "body_incomplete"],
  ] as const)("aborts the request to Sentry before its body fails, so Sentry never takes a part for the whole: %s is %s", async (name, reason) => {
    const forwarded = await run(name);
    expect(forwarded).toMatchObject({ ok: false, reason });
    expect(forwarded.sentry.events[0]).toBe("aborted");
    expect(forwarded.sentry.events).not.toContain("body ended");
  });

  it("answers a client that stalls at the deadline, without waiting for its body", async () => {
    const forwarded = await run("clientStalls");
    expect(forwarded).toMatchObject({ ok: false, reason: "body_timeout" });
    expect(forwarded.sentry.events[0]).toBe("aborted");
  });

  it("blames Sentry when it has a whole body and gives no status in time", async () => {
    const forwarded = await run("sentryTooSlow");
    expect(forwarded).toMatchObject({ ok: false, reason: "upstream_timeout" });
    expect(forwarded.sentry.events).toContain("body ended");
  });

  it("takes Sentry's 2xx without reading its body, and cancels the body so that nothing waits on it", async () => {
    let cancelled = false;
    const forwarded = await forward({
      rest: clientBody(REST),
      contentLength: WHOLE_LENGTH,
      deadlineMs: 60_000,
      // A body that never comes: a forward that waited for it would return only at the deadline.
      answer: () => new Response(new ReadableStream({ pull: () => new Promise<void>(() => {}), cancel: () => void (cancelled = true) }), { status: 200 }),
    });
    expect(forwarded).toMatchObject({ ok: true, reason: null, answered: { status: 200, body: null }, bytes: WHOLE.length, deadlineThen: "running" });
    expect(forwarded.sentry.events).toEqual(["body ended"]);
    await vi.waitFor(() => expect(cancelled).toBe(true), { timeout: 5_000 });
  });

  it("passes on the body of a refusal, which says why", async () => {
    expect(await run("refused")).toMatchObject({ ok: true, answered: { status: 400, body: '{"detail":"invalid envelope"}' } });
  });

  it("keeps Sentry's status when the body of a refusal stalls, and gives the body up at the deadline", async () => {
    const started = Date.now();
    const forwarded = await run("refusalStalls");
    expect(forwarded).toMatchObject({ ok: true, answered: { status: 400, body: null } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it.each(["refusalTooLargeDeclared", "refusalTooLargeStreamed"] as const)("keeps the status of a refusal over 64 KiB and drops its body: %s", async (name) => {
    const forwarded = await run(name);
    expect(forwarded).toMatchObject({ ok: true, answered: { status: 400, body: null } });
  });

  it("follows no redirect, and says when Sentry could not be reached", async () => {
    expect(await run("redirect")).toMatchObject({ ok: false, reason: "upstream_redirect" });
    expect(await run("unreachable")).toMatchObject({ ok: false, reason: "upstream_unreachable" });
  });
});
