import type { MetaFunction } from "@remix-run/cloudflare";
import { Link } from "@remix-run/react";

export const meta: MetaFunction = () => [{ title: "Self-test · Edge Monitoring Tunnel" }];

export default function SelfTest() {
  return (
    <section className="card" aria-labelledby="self-test-title">
      <h1 id="self-test-title">Self-test</h1>
      <p>Each action below makes the app fail on purpose, so you can see the failure arrive in Sentry.</p>
      <ul className="actions">
        <li>
          <Link to="/sentry-example-page/loader-error" className="button">
            Open a page whose loader throws
          </Link>
        </li>
      </ul>
    </section>
  );
}
