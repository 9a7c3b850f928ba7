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
} from "@remix-run/react";
import type { ReactNode } from "react";

import { monitoringSummary } from "./monitoring-summary.server";
import stylesheet from "./styles/app.css";

export const links: LinksFunction = () => [
  { rel: "stylesheet", href: stylesheet },
  { rel: "icon", href: "/favicon.svg", type: "image/svg+xml" },
];

export const meta: MetaFunction = () => [
  { title: "Edge Monitoring Tunnel" },
  { name: "description", content: "A Remix app on Cloudflare Workers that reports to Sentry through its own origin." },
];

export function loader({ context }: LoaderFunctionArgs) {
  return { monitoring: monitoringSummary(context.config.sentry) };
}

export function Layout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
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
          <nav aria-label="Main">
            <Link to="/sentry-example-page">Self-test</Link>
          </nav>
        </header>
        <main id="main" tabIndex={-1}>
          {children}
        </main>
        <ScrollRestoration />
        <Scripts />
      </body>
    </html>
  );
}

export default function App() {
  return <Outlet />;
}

export function ErrorBoundary() {
  const error = useRouteError();
  const status = isRouteErrorResponse(error) ? error.status : 500;
  return (
    <section className="card" aria-labelledby="error-title">
      <p className="eyebrow">Error {status}</p>
      <h1 id="error-title">Something went wrong</h1>
      <p>The page could not be shown. The problem has been recorded; trying again in a moment usually helps.</p>
      <p>
        <Link to="/" className="button">
          Go to the home page
        </Link>
      </p>
    </section>
  );
}
