import { wrapRequestHandler, type CloudflareOptions } from "@sentry/cloudflare";

/**
 * Reports a bug in the tunnel with the Worker's own SDK, which sends straight to Sentry (or the
 * development origin) and never through the tunnel it is reporting on. The SDK's request wrapper
 * is taken only here, on the failure path, so envelopes do not pay for it.
 */
export function reportTunnelBug(
  options: CloudflareOptions,
  error: unknown,
  request: Request,
  ctx: ExecutionContext,
): Promise<unknown> {
  return wrapRequestHandler({ options, request, context: ctx }, () => {
    throw error;
  }).catch(() => undefined);
}
