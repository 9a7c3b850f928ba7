// npm run check:blockers -- [--url <site>] [list …]
//
// Whether ad-blockers let a running site's monitoring through, in uBlock Origin's and Ghostery's
// own engines. It reads the site's home page as a browser does: the tunnel route the pages post
// envelopes to, the path a page whose Sentry SDK says `tunnel: true` posts to, the CSP report URL,
// and every script any page can load (the home page's, and every module Remix's manifest names, each
// with what it imports); then asks both engines about each, with the lists given (files, or
// http(s) addresses fetched fresh), or uBlock Origin's default lists as Debian bundles them.
// Exits 1 when any is blocked, naming the rule and its list; 2 when it cannot check.
// The scheduled workflow (.github/workflows/blockers.yml) runs it against the deployed site.
import { getTunnelPath } from "sentry-core-11";

import { BUNDLED_LISTS, listFile, loadFilterEngines, type BlockerRequest, type FilterList, type Verdict } from "./filter-lists.ts";

/** Scripts followed from the pages, at most: the app's pages load a few dozen. */
const MAX_SCRIPTS = 300;
/** How long a list or a page of the site may take to come. */
const FETCH_MS = 60_000;
/** `import … from "x.js"`, `import "x.js"` and `import("x.js")`, as esbuild writes them. */
const IMPORT = /(?:from|import)\s*\(?\s*["']([^"']+\.js)["']/g;
/**
 * A script named by its path in quotes: Remix's manifest, in the page and in its own file, names
 * every route's module (`"module": "/build/…js"`) and what each imports, the other pages' too.
 */
const NAMED = /["'](\/[^"'\s]+\.js)["']/g;

interface Checked extends BlockerRequest {
  what: string;
}

/** Said in one line; the command exits 2. */
class CannotCheck extends Error {}

async function main(args: string[]): Promise<number> {
  const urlAt = args.indexOf("--url");
  const app = new URL(urlAt >= 0 ? (args[urlAt + 1] ?? "") : `http://localhost:${process.env.PORT || 8787}`);
  const sources = urlAt >= 0 ? args.filter((_, index) => index !== urlAt && index !== urlAt + 1) : args;
  const [lists, requests] = await Promise.all([Promise.all((sources.length > 0 ? sources : BUNDLED_LISTS).map(readList)), monitoringRequests(app)]);
  const engines = await loadFilterEngines(lists);
  console.log(`${app.origin}, with uBlock Origin's and Ghostery's engines and ${engines.lists.join(", ")}:`);
  let blocked = 0;
  for (const request of requests) {
    const blockers = engines.verdicts(request).filter((verdict) => verdict.blocked);
    if (blockers.length > 0) blocked += 1;
    const path = request.url.replace(app.origin, "");
    console.log(`  ${blockers.length > 0 ? "BLOCKED" : "passes "}  ${request.what.padEnd(12)} ${path}${blockers.map(describe).join("")}`);
  }
  if (blocked === 0) {
    console.log(`All ${requests.length} pass.`);
    return 0;
  }
  console.log(
    `${blocked} of ${requests.length} blocked. For the route: set TUNNEL_ROUTE to a new neutral path, and keep the old one in TUNNEL_RETIRED_ROUTES for a day; ` +
      "for a script: rename the module whose chunk it is, so that its file's name changes (README, \"Ad-blockers\").",
  );
  return 1;
}

function describe(verdict: Verdict): string {
  return `\n             ${verdict.engine}: ${verdict.rule ?? "?"}${verdict.list ? ` (${verdict.list})` : ""}`;
}

/** A list file, or a list's address fetched now, as a list server gives it today. */
async function readList(source: string): Promise<FilterList> {
  if (!/^https?:\/\//.test(source)) {
    try {
      return listFile(source);
    } catch {
      const install = " Install uBlock Origin's lists (sudo apt-get install webext-ublock-origin-chromium), or name list files or addresses.";
      throw new CannotCheck(`No list file at ${source}.${BUNDLED_LISTS.includes(source) ? install : ""}`);
    }
  }
  const response = await fetch(source, { signal: AbortSignal.timeout(FETCH_MS) }).catch((error: Error) => error);
  if (response instanceof Error || response.status !== 200) {
    throw new CannotCheck(`The list ${source} could not be read (${response instanceof Error ? response.message : `status ${response.status}`}), so nothing was checked.`);
  }
  return { name: new URL(source).pathname.split("/").pop() || source, raw: await response.text() };
}

/** A page or script of the site, as a browser fetches it. */
async function fetchText(url: string | URL): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_MS) }).catch((error: Error) => {
    throw new CannotCheck(`${String(url)} did not answer (${error.message}). Start the app (npm start), or give its address with --url.`);
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** What the site's pages send and load for monitoring. */
async function monitoringRequests(app: URL): Promise<Checked[]> {
  const home = new URL("/", app).href;
  const page = await fetchText(home);
  const settings = /<script id="monitoring-settings"[^>]*>(.*?)<\/script>/s.exec(page.text)?.[1];
  if (!settings) throw new CannotCheck(`${home} (${page.status}) has no monitoring settings: is SENTRY_DSN set?`);
  const { tunnel, dsn } = JSON.parse(settings) as { tunnel: string; dsn: string };
  const requests: Checked[] = [{ url: new URL(tunnel, home).href, pageUrl: home, type: "fetch", what: "envelopes" }];
  // Where a page whose SDK (11.12 or later) says `tunnel: true` posts, as that SDK derives it;
  // served unless TUNNEL_SENTRY_PATHS=off.
  const sentryPath = getTunnelPath(dsn);
  if (sentryPath) requests.push({ url: new URL(sentryPath, home).href, pageUrl: home, type: "fetch", what: "tunnel: true" });
  const reportUri = /report-uri (\S+?)(?:;|$)/.exec(page.headers.get("content-security-policy") ?? "")?.[1];
  if (reportUri) requests.push({ url: new URL(reportUri, home).href, pageUrl: home, type: "cspreport", what: "CSP reports" });
  for (const script of await scriptsOf(page.text, home)) requests.push({ url: script, pageUrl: home, type: "script", what: "script" });
  return requests;
}

/**
 * Every script of the site any page can load: those the home page names or imports, every module
 * Remix's manifest names (the other pages' routes too), and every one those import, statically or
 * not (the SDK's chunk is a dynamic import); each read once.
 */
async function scriptsOf(html: string, home: string): Promise<string[]> {
  const { origin } = new URL(home);
  const scriptsIn = (text: string, base: string | URL) => [...text.matchAll(IMPORT), ...text.matchAll(NAMED)].map((match) => new URL(match[1]!, base));
  const queue = [...html.matchAll(/(?:src|href)="([^"]+\.js)"/g)].map((match) => new URL(match[1]!, home)).concat(scriptsIn(html, home));
  const found = new Set<string>();
  while (queue.length > 0 && found.size < MAX_SCRIPTS) {
    const script = queue.shift()!;
    if (found.has(script.href) || script.origin !== origin) continue;
    found.add(script.href);
    queue.push(...scriptsIn((await fetchText(script)).text, script));
  }
  return [...found];
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof CannotCheck)) throw error;
  console.error(error.message);
  process.exitCode = 2;
}
