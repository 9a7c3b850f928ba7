import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { getTunnelPath } from "sentry-core-11";

import { TEST_DSN } from "../testing/harness.ts";
import { derivedRoute, FLAGGED_WORDS, routeProblem, sentryTunnelPath } from "./route.ts";

/** An app such as this one: its pages, and `/build/*`, where Remix serves its scripts. */
const PAGES = ["/", "/sentry-example-page", "/sentry-example-page/loader-error", "/monitoring", "/build/*", "/*"];

describe("derivedRoute", () => {
  it("is the same for the same DSN, release after release: pages loaded before a deploy post to it", () => {
    // Pinned: a change to the derivation would strand every open tab of every install.
    expect(derivedRoute(TEST_DSN, PAGES)).toBe("/6b1xzn8op8");
  });

  it("differs between installs, and is always a route no generic rule and no page claims", () => {
    const keys = fc.stringMatching(/^[0-9a-f]{32}$/);
    const projects = fc.integer({ min: 1, max: 9_999_999 });
    fc.assert(
      fc.property(keys, projects, (key, project) => {
        const route = derivedRoute(`https://${key}@o1.ingest.us.sentry.io/${project}`, PAGES);
        expect(route).toMatch(/^\/[a-z0-9]{10}$/);
        expect(routeProblem(route!, PAGES)).toBeUndefined();
      }),
    );
    const routes = new Set(Array.from({ length: 200 }, (_, project) => derivedRoute(`https://k@o1.ingest.us.sentry.io/${project + 1}`, PAGES)));
    expect(routes.size).toBe(200);
  });

  it("gives up, rather than loop, when the app's pages claim every path", () => {
    expect(derivedRoute(TEST_DSN, ["/", "/:slug"])).toBeUndefined();
  });
});

describe("routeProblem", () => {
  it.each(["/k7q2x9", "/a/b-c/d_e", "/x1", "/shop-2x"])("takes %s", (route) => {
    expect(routeProblem(route, PAGES)).toBeUndefined();
  });

  it.each([
    ["a query", "/k7q2x9?o=1", "one to four segments"],
    ["no leading slash", "k7q2x9", "one to four segments"],
    ["a trailing slash", "/k7q2x9/", "one to four segments"],
    ["capitals", "/K7Q2X9", "one to four segments"],
    ["a dot", "/favicon.svg", "one to four segments"],
    ["an escape", "/k7%71", "one to four segments"],
    ["the root", "/", "one to four segments"],
    ["five segments", "/a/b/c/d/e", "one to four segments"],
    ["/build, which the host reserves", "/build", "would shadow /build/*"],
    ["a path under /build", "/build/x", "would shadow /build/*"],
    ["the self-test's page", "/sentry-example-page", 'holds "sentry"'],
    ["a flagged word inside a longer one", "/blog", 'holds "log"'],
    ["the next generic rule's words", "/api/tunnel", 'holds "tunnel"'],
  ])("refuses %s", (_, route, problem) => {
    expect(routeProblem(route, PAGES)).toContain(problem);
  });

  it("refuses a route that shadows a page, a parent of one, or one with a parameter, and its report path too", () => {
    const pages = ["/", "/account/settings", "/shop/:item", "/docs/*", "/x1/csp", "/*"];
    expect(routeProblem("/account/settings", pages)).toContain("would shadow /account/settings, which the app serves");
    expect(routeProblem("/account", pages)).toContain("would shadow /account/settings, which the app serves");
    expect(routeProblem("/shop/k7q2x9", pages)).toContain("would shadow /shop/:item, which the app serves");
    expect(routeProblem("/docs/k7q2x9", pages)).toContain("would shadow /docs/*, which the app serves");
    expect(routeProblem("/x1", pages)).toContain("would shadow /x1/csp, which the app serves");
    // Below a page is not the page; the root catch-all is the 404 page, which every route passes.
    expect(routeProblem("/account/settings2", pages)).toBeUndefined();
    expect(routeProblem("/k7q2x9", pages)).toBeUndefined();
  });

  it("refuses every word generic rules key on, wherever it stands", () => {
    for (const word of FLAGGED_WORDS) expect(routeProblem(`/a-${word}-b`, PAGES), word).toContain(`holds "${word}"`);
  });
});

describe("sentryTunnelPath", () => {
  it("is the path Sentry's own SDK derives for tunnel: true, for any DSN", () => {
    const dsns = fc.tuple(
      fc.constantFrom("https", "http"),
      fc.stringMatching(/^[0-9a-f]{32}$/),
      fc.constantFrom("o1.ingest.us.sentry.io", "o4501.ingest.de.sentry.io", "sentry.example.com"),
      fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
      fc.constantFrom("", "sentry/", "a/b/"),
      fc.integer({ min: 1, max: 9_999_999 }),
    );
    fc.assert(
      fc.property(dsns, ([scheme, key, host, port, path, project]) => {
        const dsn = `${scheme}://${key}@${host}${port === undefined ? "" : `:${port}`}/${path}${project}`;
        expect(sentryTunnelPath(dsn)).toBe(getTunnelPath(dsn));
      }),
    );
    expect(sentryTunnelPath(TEST_DSN)).toBe(getTunnelPath(TEST_DSN));
  });
});
