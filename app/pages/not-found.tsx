import { Link, useLocation } from "@remix-run/react";

/** The 404 page: for paths no route claims, and for pages that are switched off. */
export function NotFoundPage() {
  const { pathname } = useLocation();
  return (
    <section className="card" aria-labelledby="not-found-title">
      <p className="eyebrow">Error 404</p>
      <h1 id="not-found-title">Page not found</h1>
      <p>
        There is nothing at <code>{pathname}</code>. It may have moved, or the link may be mistyped.
      </p>
      <GoHome />
    </section>
  );
}

/** The way out of every error page. */
export function GoHome() {
  return (
    <p>
      <Link to="/" className="button">
        Go to the home page
      </Link>
    </p>
  );
}
