import { waitUntil } from "cloudflare:workers";
import { wrapRequestHandler, type CloudflareOptions } from "@sentry/cloudflare";

/**
 * Reports a bug in the tunnel with the Worker's own SDK, which sends straight to Sentry (or the
 * development origin) and never through the tunnel it is reporting on. The SDK's request wrapper
 * is taken only here, on the failure path, so envelopes do not pay for it. The report outlives
 * the response through the runtime's own `waitUntil`, as the tunnel has no `ExecutionContext`.
 */
export function reportTunnelBug(options: CloudflareOptions, error: unknown, request: Request): void {
  // A context of its own: the SDK replaces `waitUntil` on the context it is given.
  const context = { waitUntil, passThroughOnException: () => {}, props: {} } as unknown as ExecutionContext;
  waitUntil(
    // The error alone: the tunnel never traces itself, as a span per envelope would double every envelope's quota.
    wrapRequestHandler({ options: { ...options, tracesSampler: () => 0 }, request, context }, () => {
      throw error;
    }).catch(() => undefined),
  );
}
