import { describe, expect, it } from "vitest";

import { createTunnel } from "../src/index.ts";
import { envelope, eventually, headerOf, StubSentry, TEST_DSN } from "../src/testing.ts";

describe("the harness for adopters' tests (@edge-monitoring/tunnel/testing)", () => {
  it("eventually says, when it gives up, what it waited for and what it last saw", async () => {
    let deliveries = 0;
    const waiting = eventually(() => deliveries === 2, 60, { saw: () => ({ deliveries }) });
    deliveries = 1;
    // What it waited for is the condition's source, as the compiler left it: not held here.
    const message = await waiting.then(
      () => "",
      (error: Error) => error.message,
    );
    expect(message).toMatch(/^condition not met within 60 ms: /);
    expect(message.split("\n").at(-1)).toBe('last seen: {"deliveries":1}');
  });

  it("eventually returns as soon as the condition holds", async () => {
    let polls = 0;
    await eventually(() => (polls += 1) === 3, 1_000, { pollMs: 1 });
    expect(polls).toBe(3);
  });

  it("writes an envelope as an SDK does: a header line naming the DSN and a fresh event id, then the items", () => {
    const first = envelope();
    const second = envelope({ sentAt: new Date(Date.UTC(2026, 11, 1)), items: '{"type":"log"}\n{}\n' });
    expect(headerOf(first.body)).toEqual({ dsn: TEST_DSN, event_id: first.id });
    expect(first.id).toMatch(/^[0-9a-f]{32}$/);
    expect(second.id).not.toBe(first.id);
    expect(new TextDecoder().decode(second.body)).toBe(`{"dsn":"${TEST_DSN}","event_id":"${second.id}","sent_at":"2026-12-01T00:00:00.000Z"}\n{"type":"log"}\n{}\n`);
    const attachment = envelope({ attachmentBytes: 100_000 });
    expect(attachment.body.byteLength).toBe(new TextEncoder().encode(`${JSON.stringify(headerOf(attachment.body))}\n{"type":"attachment","length":100000}\n`).byteLength + 100_001);
  });

  it("tests a Worker's tunnel as the README shows: an envelope through it reaches the stub Sentry", async () => {
    const sentry = new StubSentry();
    const tunnel = createTunnel({ dsn: TEST_DSN, limiter: "off" }, { fetch: sentry.fetch, log: () => {} });
    const { body } = envelope();
    await tunnel.handle(new Request(`https://app.example${tunnel.describe().pages_post_to}`, { method: "POST", body, headers: { "content-length": String(body.byteLength) } }));
    await eventually(() => sentry.envelopes().length === 1);
    expect(sentry.envelopes()[0]!.body).toEqual(body);
  });
});
