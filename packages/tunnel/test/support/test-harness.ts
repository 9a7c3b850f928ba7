import { createMessageBatch } from "cloudflare:test";

import type { SpooledEnvelope } from "../../src/spool/store.ts";

/**
 * What the package's workerd tests (`*.workerd.test.ts`) have besides the shipped harness
 * (`testing.ts`): real message batches, which only Cloudflare's vitest integration makes, and byte
 * helpers. Not shipped: the build and the tarball leave it out.
 */
export * from "../../src/testing/harness.ts";

export function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const whole = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.byteLength;
  }
  return whole;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((byte, index) => byte === b[index]);
}

/** The stored messages as the queue hands them to `queue()`: one real batch, each on its `attempts`. */
export function batchOf(queue: string, messages: readonly SpooledEnvelope[], attempts = 1): MessageBatch<unknown> {
  return createMessageBatch<unknown>(
    queue,
    messages.map((body, index) => ({ id: String(index), timestamp: new Date(), attempts, body })),
  );
}

