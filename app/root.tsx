import type { LinksFunction, LoaderFunctionArgs, MetaFunction } from "@remix-run/cloudflare";
import {
  isRouteErrorResponse,
  Link,
  Links,
  Meta,
  Outlet,
  Scripts,
  ScrollRestoration,
  useRouteError,
  useRouteLoaderData,
} from "@remix-run/react";
import { useEffect, useState, type ComponentType, type ReactNode } from "react";

import { browserMonitoringSettings } from "./monitoring/browser-settings.server";
import { EarlyErrorsScript } from "./monitoring/early-errors";
import { ErrorReference } from "./monitoring/error-reference";
import { loadSentryAfterLoad } from "./monitoring/load-sentry";
import { monitoringSummary } from "./monitoring/monitoring-summary.server";
import { pageTrace } from "./monitoring/page-trace.server";
import { MonitoringSettingsScript } from "./monitoring/settings-script";
import { GoHome, NotFoundPage } from "./pages/not-found";
import { useNonce } from "./security/nonce";
import stylesheet from "./styles/app.css";

export const links: LinksFunction = () => [
  { rel: "stylesheet", href: stylesheet },
  { rel: "icon", href: "/favicon.svg", type: "image/svg+xml" },
];

export function loader({ context }: LoaderFunctionArgs) {
  return {
    monitoringSummary: monitoringSummary(context.config.sentry),
    browserSettings: browserMonitoringSettings(context.config.sentry, context.tunnel),
    // The page's pageload transaction continues the trace of the request that rendered it.
    ...pageTrace(),
    selfTest: context.config.selfTest,
  };
}

export const meta: MetaFunction<typeof loader> = ({ data }) => [
  { title: "Edge Monitoring Tunnel" },
  { name: "description", content: "A Remix app on Cloudflare Workers that reports to Sentry through its own origin." },
  ...(data?.sentryTrace ? [{ name: "sentry-trace", content: data.sentryTrace }] : []),
  ...(data?.sentryBaggage ? [{ name: "baggage", content: data.sentryBaggage }] : []),
];

export function Layout({ children }: { children: ReactNode }) {
  const root = useRouteLoaderData<typeof loader>("root");
  const nonce = useNonce();
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <EarlyErrorsScript nonce={nonce} />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <Meta />
        <Links />
      </head>
      <body>
        <a className="skip-link" href="#main">
          Skip to content
        </a>
        <header className="site-header">
          <Link to="/" className="brand">
            Edge Monitoring Tunnel
          </Link>
          {root?.selfTest && (
            <nav aria-label="Main">
              <Link to="/sentry-example-page">Self-test</Link>
            </nav>
          )}
        </header>
        <main id="main" tabIndex={-1}>
          {children}
        </main>
        <ScrollRestoration nonce={nonce} />
        <MonitoringSettingsScript settings={root?.browserSettings} nonce={nonce} />
        <Scripts nonce={nonce} />
      </body>
    </html>
  );
}

/**
 * Asks for the SDK once hydration has committed and the page has loaded, then renders its route
 * tracing, which names the pageload and each navigation after the matched route.
 */
export default function App() {
  const [RouteTracing, setRouteTracing] = useState<ComponentType>();
  useEffect(() => {
    void loadSentryAfterLoad().then((sentry) => sentry && setRouteTracing(() => sentry.RouteTracing));
  }, []);
  return (
    <>
      {RouteTracing && <RouteTracing />}
      <Outlet />
    </>
  );
}

export function ErrorBoundary() {
  const error = useRouteError();
  const status = isRouteErrorResponse(error) ? error.status : 500;
  if (status === 404) return <NotFoundPage />;
  return (
    <section className="card" aria-labelledby="error-title">
      <p className="eyebrow">Error {status}</p>
      <h1 id="error-title">Something went wrong</h1>
      <p>The page could not be shown. The problem has been recorded; trying again in a moment usually helps.</p>
      <ErrorReference error={error} />
      <GoHome />
    </section>
  );
}
