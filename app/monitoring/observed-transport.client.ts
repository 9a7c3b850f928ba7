import type { Envelope, Transport } from "@sentry/core";
import { makeFetchTransport } from "@sentry/remix";

import { recordTunnelAnswer } from "./tunnel-status";

function describe(envelope: Envelope) {
  const id = (envelope[0] as { event_id?: unknown }).event_id;
  return {
    eventId: typeof id === "string" ? id : undefined,
    itemTypes: envelope[1].map(([itemHeader]) => itemHeader.type),
  };
}

/** The SDK's own fetch transport, watched so that the page can say what the tunnel answered. */
export function observedFetchTransport(options: Parameters<typeof makeFetchTransport>[0]): Transport {
  const transport = makeFetchTransport(options);
  return {
    ...transport,
    async send(envelope) {
      const sent = describe(envelope);
      try {
        const response = await transport.send(envelope);
        // An envelope the SDK held back itself (rate limit, full queue) has no status to report.
        if (response?.statusCode !== undefined) recordTunnelAnswer({ ...sent, status: response.statusCode });
        return response;
      } catch (error) {
        recordTunnelAnswer({ ...sent, status: undefined });
        throw error;
      }
    },
  };
}
