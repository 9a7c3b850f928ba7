import type { SentryConfig } from "../app/config.server";
import { ownTrace } from "./incoming-trace";
import { RELEASE } from "../app/release.generated";

/**
 * The request as the Worker's SDK should see it: a client's trace continued, but sampled at the
 * Worker's own rate and described by the Worker's own environment and release (decision 009). A
 * sampled decision the client forged (its `sample_rand`, under a rate below 1) makes a
 * transaction like any other, which counts against the client's share (decision 017).
 */
export function withOwnTrace<R extends Request>(request: R, sentry: Pick<SentryConfig, "environment" | "tracesSampleRate" | "publicKey">): R {
  const own = { environment: sentry.environment, release: RELEASE, publicKey: sentry.publicKey, sampleRate: sentry.tracesSampleRate };
  const trace = ownTrace(request.headers.get("sentry-trace"), request.headers.get("baggage"), own);
  if (trace.kind === "absent") return request;
  const headers = new Headers(request.headers);
  if (trace.kind === "continued") {
    headers.set("sentry-trace", trace.sentryTrace);
    headers.set("baggage", trace.baggage);
  } else {
    headers.delete("sentry-trace");
    headers.delete("baggage");
  }
  // The incoming request's `cf` properties go with it.
  return new Request(request, { headers }) as R;
}
