import type { Envelope, Transport } from "@sentry/core";
import { makeBrowserOfflineTransport, makeFetchTransport } from "@sentry/remix";

import { recordObservedSend } from "./observed-sends";

/**
 * Chromium refuses a `keepalive` request when the bodies of all keepalive requests in flight
 * would pass 64 KiB, and it frees a request's share only once the request is done. The SDK counts
 * 60,000 characters and frees its count as soon as the status arrives, so under load it asks for
 * keepalive past the browser's limit and the envelope is lost (seen in the volume test: one event
 * in twelve). Half the limit, counted in bytes until the answer is read, leaves room for headers.
 */
const KEEPALIVE_BUDGET_BYTES = 32 * 1024;
let keepaliveBytesInFlight = 0;

const utf8 = new TextEncoder();

function byteLength(body: BodyInit | null | undefined): number {
  if (typeof body === "string") return utf8.encode(body).byteLength;
  if (body instanceof Uint8Array) return body.byteLength;
  return Number.POSITIVE_INFINITY;
}

/**
 * `fetch` for the SDK's transport: keepalive only within the budget, and a keepalive request that
 * fails is sent once more without it. The browser refuses such a request before sending anything,
 * so the retry does not deliver an envelope twice (and Sentry drops a repeated event id anyway).
 */
async function keepaliveWithinBudget(input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> {
  const size = init.keepalive ? byteLength(init.body) : 0;
  if (!init.keepalive || keepaliveBytesInFlight + size > KEEPALIVE_BUDGET_BYTES) {
    return fetch(input, { ...init, keepalive: false });
  }
  keepaliveBytesInFlight += size;
  try {
    const response = await fetch(input, init);
    // The browser holds the budget until the answer has been read to its end.
    await response
      .clone()
      .arrayBuffer()
      .catch(() => undefined);
    return response;
  } catch {
    return fetch(input, { ...init, keepalive: false });
  } finally {
    keepaliveBytesInFlight -= size;
  }
}

function describe(envelope: Envelope) {
  const id = (envelope[0] as { event_id?: unknown }).event_id;
  return {
    eventId: typeof id === "string" ? id : undefined,
    itemTypes: envelope[1].map(([itemHeader]) => itemHeader.type),
  };
}

/** The SDK's own fetch transport, watched so that the page can say what the tunnel answered. */
function observedFetchTransport(options: Parameters<typeof makeFetchTransport>[0]): Transport {
  const transport = makeFetchTransport(options, keepaliveWithinBudget);
  return {
    ...transport,
    async send(envelope) {
      const sent = describe(envelope);
      try {
        const response = await transport.send(envelope);
        // An envelope the SDK held back itself (rate limit, full queue) has no status to report.
        if (response?.statusCode !== undefined) recordObservedSend({ ...sent, status: response.statusCode });
        return response;
      } catch (error) {
        recordObservedSend({ ...sent, status: undefined });
        throw error;
      }
    },
  };
}

/**
 * The watched transport behind the SDK's offline store: an envelope whose request fails (the user
 * is offline) waits in IndexedDB, up to 64 of them, and is sent when the browser is back online or
 * on the next page load. An answer of 400 or more is not a failure here: the tunnel already stores
 * what Sentry could not take.
 */
export function offlineObservedTransport(options: Parameters<typeof makeFetchTransport>[0]): Transport {
  return makeBrowserOfflineTransport(observedFetchTransport)({ ...options, maxQueueSize: 64, flushAtStartup: true });
}
