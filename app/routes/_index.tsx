import type { LoaderFunctionArgs } from "@remix-run/cloudflare";
import { useLoaderData, useRouteLoaderData } from "@remix-run/react";

import { useObservedSends } from "../monitoring/observed-sends";
import type { loader as rootLoader } from "../root";

/**
 * Whether the spool is on, as the tunnel's start line says, outside production only: the
 * queue's depth is in the heartbeat's line and data point, where operators look.
 */
export function loader({ context }: LoaderFunctionArgs) {
  if (context.config.sentry.environment === "production") return { spoolCounts: "hidden" as const };
  return { spoolCounts: context.tunnel.describe().spool };
}

export default function Home() {
  const { spoolCounts: spool } = useLoaderData<typeof loader>();
  const root = useRouteLoaderData<typeof rootLoader>("root");
  const monitoring = root?.monitoringSummary;
  const answer = useObservedSends().at(-1);
  return (
    <>
      <section className="intro">
        <h1>Edge Monitoring Tunnel</h1>
        <p className="lead">
          A Remix app rendered on Cloudflare Workers that sends its own errors, traces and logs to Sentry through
          its own origin, so ad-blockers and cookie rules don&apos;t drop them.
        </p>
      </section>
      <section className="card" aria-labelledby="monitoring-title">
        <h2 id="monitoring-title">Monitoring</h2>
        {monitoring?.configured && monitoring.placeholder && <PlaceholderNotice />}
        {monitoring?.configured ? (
          <dl className="facts">
            <dt>Project</dt>
            <dd>{monitoring.project}</dd>
            <dt>Organisation</dt>
            <dd>{monitoring.org ?? "self-hosted"}</dd>
            <dt>Region</dt>
            <dd>{monitoring.region ?? "default"}</dd>
            <dt>Environment</dt>
            <dd>{monitoring.environment}</dd>
            <dt>Release</dt>
            <dd>
              <code title={monitoring.release}>{monitoring.release.slice(0, 7)}</code>
            </dd>
            <dt>Tunnel</dt>
            <dd data-testid="tunnel-status">
              {answer === undefined
                ? "no envelope sent yet"
                : answer.status === undefined
                  ? "the last envelope got no answer"
                  : `answered ${answer.status} to the last envelope`}
            </dd>
            {spool !== "hidden" && (
              <>
                <dt>Spool</dt>
                <dd data-testid="spool-status">
                  {spool}
                </dd>
              </>
            )}
          </dl>
        ) : (
          <p>
            Monitoring is not configured: set <code>SENTRY_DSN</code> to report to Sentry.
          </p>
        )}
      </section>
    </>
  );
}

function PlaceholderNotice() {
  return (
    <p className="notice" data-testid="placeholder-dsn">
      This is the local placeholder DSN that <code>npm start</code> sets when <code>SENTRY_DSN</code> is empty: no Sentry
      project receives anything, and locally everything lands in Spotlight. Set <code>SENTRY_DSN</code> in{" "}
      <code>.dev.vars</code> to report to your own project.
    </p>
  );
}
