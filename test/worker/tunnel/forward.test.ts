import { describe, expect, it } from "vitest";

import { useWorkerdCases } from "../../support/workerd-cases";

/** What one case of `forward.workerd.ts` observed. */
interface Forwarded {
  ok: boolean;
  reason: string | null;
  answered: { status: number; body: string | null } | undefined;
  bytes: number;
  sentry: { events: string[]; bytes: number; text: string };
  tookMs: number;
}

const HEAD = '{"dsn":"https://k@o1.ingest.sentry.io/2"}\n';
const WHOLE = `${HEAD}event item one\nevent item two\n`;

describe("forwardEnvelope, in workerd, with Sentry a stub fetch", () => {
  const cases = useWorkerdCases("test/worker/tunnel/forward.workerd.ts");
  const run = (name: string) => cases.run<Forwarded>(name);

  it.each(["declaredLength", "unknownLength"])("sends the bytes already read, then the rest, whole and in order (%s)", async (name) => {
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
  ])("aborts the request to Sentry before its body fails, so Sentry never takes a part for the whole: %s is %s", async (name, reason) => {
    const forwarded = await run(name);
    expect(forwarded).toMatchObject({ ok: false, reason });
    expect(forwarded.sentry.events[0]).toBe("aborted");
    expect(forwarded.sentry.events).not.toContain("body ended");
  });

  it("answers a client that stalls at the deadline, without waiting for its body", async () => {
    const forwarded = await run("clientStalls");
    expect(forwarded).toMatchObject({ ok: false, reason: "body_timeout" });
    expect(forwarded.sentry.events[0]).toBe("aborted");
    expect(forwarded.tookMs).toBeLessThan(2_000);
  });

  it.each(["sentryTooSlow", "answerStalls"])("blames Sentry when it is too slow with a whole body: %s", async (name) => {
    const forwarded = await run(name);
    expect(forwarded).toMatchObject({ ok: false, reason: "upstream_timeout" });
    expect(forwarded.sentry.events).toContain("body ended");
    expect(forwarded.tookMs).toBeLessThan(2_000);
  });

  it.each(["answerTooLargeDeclared", "answerTooLargeStreamed"])("keeps the status of an answer over 64 KiB and drops its body: %s", async (name) => {
    const forwarded = await run(name);
    expect(forwarded).toMatchObject({ ok: true, answered: { status: 200, body: null } });
  });

  it("follows no redirect, and says when Sentry could not be reached", async () => {
    expect(await run("redirect")).toMatchObject({ ok: false, reason: "upstream_redirect" });
    expect(await run("unreachable")).toMatchObject({ ok: false, reason: "upstream_unreachable" });
  });
});
