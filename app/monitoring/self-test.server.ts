import { json, type AppLoadContext, type HeadersFunction } from "@remix-run/cloudflare";

/**
 * Lets a self-test request through, or throws its answer: 404 while the self-test is off (nothing
 * is reported), and 429 for a request that would make the Worker report to Sentry on behalf of a
 * client over its limit (the tunnel's, per client), so that nobody can spend the project's quota
 * by pressing the buttons in a loop.
 */
export async function admitSelfTest(context: AppLoadContext, request: Request, { reports }: { reports: boolean }): Promise<void> {
  if (!context.config.selfTest) throw json(null, { status: 404 });
  if (reports && !(await context.clientMayReport(request))) {
    throw json(
      { error: "Too many self-test reports from this client; wait as Retry-After says." },
      { status: 429, headers: { "retry-after": String(context.config.tunnel.rateLimitPeriodSeconds) } },
    );
  }
}

/** The self-test routes' `headers`: a refused request's `Retry-After` reaches the client. */
export const selfTestHeaders: HeadersFunction = ({ errorHeaders }) => errorHeaders ?? new Headers();
