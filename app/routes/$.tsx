import { json, type MetaFunction } from "@remix-run/cloudflare";
import { Link, useLocation } from "@remix-run/react";

export const meta: MetaFunction = () => [{ title: "Page not found · Edge Monitoring Tunnel" }];

/** Every path no other route claims: a real 404 status, not a 200 page that says "not found". */
export function loader() {
  return json(null, { status: 404 });
}

export default function NotFound() {
  const { pathname } = useLocation();
  return (
    <section className="card" aria-labelledby="not-found-title">
      <p className="eyebrow">Error 404</p>
      <h1 id="not-found-title">Page not found</h1>
      <p>
        There is nothing at <code>{pathname}</code>. It may have moved, or the link may be mistyped.
      </p>
      <p>
        <Link to="/" className="button">
          Go to the home page
        </Link>
      </p>
    </section>
  );
}
