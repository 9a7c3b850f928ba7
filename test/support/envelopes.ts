import { gunzipSync } from "node:zlib";

import { envelope } from "@edge-monitoring/tunnel/testing";

type EnvelopeSpec = NonNullable<Parameters<typeof envelope>[0]>;

import type { Delivery } from "./fake-ingest";

/** The one envelope builder of the tests, the tunnel's harness's (`@edge-monitoring/tunnel/testing`), its bytes as a Buffer. */
export function buildEnvelope(spec: EnvelopeSpec = {}): { id: string; body: Buffer } {
  const { id, body } = envelope(spec);
  return { id, body: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
}

interface EnvelopeItem {
  header: { type: string; length?: number; [key: string]: unknown };
  payload: Buffer;
}

export interface Envelope {
  header: { dsn?: string; event_id?: string; sdk?: { name?: string }; trace?: { trace_id?: string }; [key: string]: unknown };
  items: EnvelopeItem[];
}

/** Sentry's envelope format: a JSON header line, then items of a JSON header and a payload. */
export function parseEnvelope(body: Buffer): Envelope {
  let offset = 0;
  const line = (): Buffer => {
    const end = body.indexOf(0x0a, offset);
    const slice = body.subarray(offset, end === -1 ? body.length : end);
    offset = end === -1 ? body.length : end + 1;
    return slice;
  };
  const header = JSON.parse(line().toString("utf8")) as Envelope["header"];
  const items: EnvelopeItem[] = [];
  while (offset < body.length) {
    const raw = line();
    if (raw.length === 0) continue;
    const itemHeader = JSON.parse(raw.toString("utf8")) as EnvelopeItem["header"];
    let payload: Buffer;
    if (typeof itemHeader.length === "number") {
      payload = body.subarray(offset, offset + itemHeader.length);
      offset += itemHeader.length + 1;
    } else {
      payload = line();
    }
    items.push({ header: itemHeader, payload });
  }
  return { header, items };
}

/** What a test wants to know of one delivered envelope. */
export interface Received {
  /** Came through the tunnel (the browser's), rather than from the Worker's own SDK. */
  viaTunnel: boolean;
  envelope: Envelope;
  bytes: number;
}

export function received(deliveries: readonly Delivery[]): Received[] {
  return deliveries.map((delivery) => ({
    viaTunnel: delivery.headers["x-sentry-forwarded-for"] !== undefined,
    envelope: parseEnvelope(delivery.body),
    bytes: delivery.body.length,
  }));
}

/** Payloads of one item type, parsed as JSON. */
export function payloads<T = Record<string, unknown>>(envelopes: readonly Received[], type: string): T[] {
  return envelopes.flatMap(({ envelope }) =>
    envelope.items.filter((item) => item.header.type === type).map((item) => JSON.parse(item.payload.toString("utf8")) as T),
  );
}

/**
 * An envelope as Sentry reads it (decompressed, if `gzip`), with `sent_at` set aside: the one field
 * the spool may move, by the time it held the envelope. The rest is the bytes after the header line.
 */
export function besidesSentAt(body: Buffer, gzip = false): { header: Record<string, unknown>; rest: Buffer } {
  const plain = gzip ? gunzipSync(body) : body;
  const newline = plain.indexOf(0x0a);
  const { sent_at: _moved, ...header } = JSON.parse(plain.subarray(0, newline).toString("utf8")) as Record<string, unknown>;
  return { header, rest: plain.subarray(newline) };
}
