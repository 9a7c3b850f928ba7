import type { SentryConfig } from "../app/config.server";
import { ownTrace } from "../app/monitoring/incoming-trace.server";
import { RELEASE } from "../app/release.generated";

/**
 * The request as the Worker's SDK should see it: a client's trace continued, but sampled at the
 * Worker's own rate and described by the Worker's own environment and release (decision 009). A
 * sampled decision the client could have forged (its `sample_rand`, under a rate below 1) counts
 * against the client's limit; past it, the request starts a trace of its own.
 */
export async function withOwnTrace<R extends Request>(
  request: R,
  sentry: Pick<SentryConfig, "environment" | "tracesSampleRate" | "publicKey">,
  clientMayReport: (request: Request) => Promise<boolean>,
): Promise<R> {
  const own = { environment: sentry.environment, release: RELEASE, publicKey: sentry.publicKey, sampleRate: sentry.tracesSampleRate };
  const trace = ownTrace(request.headers.get("sentry-trace"), request.headers.get("baggage"), own);
  if (trace.kind === "absent") return request;
  let continued = trace.kind === "continued" ? trace : undefined;
  if (continued?.claimed && continued.sampled && own.sampleRate < 1 && !(await clientMayReport(request))) continued = undefined;
  const headers = new Headers(request.headers);
  if (continued) {
    headers.set("sentry-trace", continued.sentryTrace);
    headers.set("baggage", continued.baggage);
  } else {
    headers.delete("sentry-trace");
    headers.delete("baggage");
  }
  // The incoming request's `cf` properties go with it.
  return new Request(request, { headers }) as R;
}
