/**
 * `npm run check:blockers -- [--url <app>] [list file …]`: whether ad-blockers let a running app's
 * monitoring through. It reads the app's home page as a browser does: the tunnel route the page
 * posts envelopes to, the path a page whose Sentry SDK says `tunnel: true` would post to instead,
 * the CSP report URL, and every script the page can load (the SDK's chunk among them); then asks uBlock Origin's and Ghostery's engines about each, with the list files
 * given, or uBlock Origin's default lists as Debian bundles them. Exits 1 when any is blocked.
 */
import { getTunnelPath } from "sentry-core-11";

import { importsOf, scriptsReachable } from "../src/scripts-reachable.ts";
import { listFiles, loadFilterEngines, type BlockerRequest, type Verdict } from "./filter-lists.ts";

/** Scripts followed from the page, at most: a page loads a few dozen. */
const MAX_SCRIPTS = 300;

interface Checked extends BlockerRequest {
  what: string;
}

async function main(args: string[]): Promise<number> {
  const urlAt = args.indexOf("--url");
  const app = new URL(urlAt >= 0 ? (args[urlAt + 1] ?? "") : `http://localhost:${process.env.PORT || 8787}`);
  // Without --url, every argument is a list file (the first too).
  const given = urlAt >= 0 ? args.filter((_, index) => index !== urlAt && index !== urlAt + 1) : args;
  const files = listFiles(given);
  if (typeof files === "string") {
    console.error(files);
    return 2;
  }
  const requests = await monitoringRequests(app);
  if (typeof requests === "string") {
    console.error(requests);
    return 2;
  }
  const engines = await loadFilterEngines(files);
  console.log(`${app.origin}, with uBlock Origin's and Ghostery's engines and ${engines.lists.join(", ")}:`);
  let blocked = 0;
  for (const request of requests) {
    const verdicts = engines.verdicts(request);
    const blockers = verdicts.filter((verdict) => verdict.blocked);
    if (blockers.length > 0) blocked += 1;
    const path = request.url.replace(app.origin, "");
    console.log(`  ${blockers.length > 0 ? "BLOCKED" : "passes "}  ${request.what.padEnd(12)} ${path}${blockers.map(describe).join("")}`);
  }
  if (blocked === 0) {
    console.log(`All ${requests.length} pass.`);
    return 0;
  }
  console.log(
    `${blocked} of ${requests.length} blocked. For the route: set TUNNEL_ROUTE to a new neutral path, and keep the old one in TUNNEL_RETIRED_ROUTES for a day (README, "Ad-blockers").`,
  );
  return 1;
}

function describe(verdict: Verdict): string {
  return `\n             ${verdict.engine}: ${verdict.rule ?? "?"}${verdict.list ? ` (${verdict.list})` : ""}`;
}

/** What the app's home page sends and loads for monitoring, or why that cannot be read. */
async function monitoringRequests(app: URL): Promise<Checked[] | string> {
  const home = new URL("/", app).href;
  const response = await fetch(home).catch((error: Error) => error);
  if (response instanceof Error) return `${home} did not answer (${response.message}). Start the app (npm start), or give its address with --url.`;
  const html = await response.text();
  const settings = /<script id="monitoring-settings"[^>]*>(.*?)<\/script>/s.exec(html)?.[1];
  if (!settings) return `${home} (${response.status}) has no monitoring settings: is SENTRY_DSN set?`;
  const { tunnel, dsn } = JSON.parse(settings) as { tunnel: string; dsn: string };
  const requests: Checked[] = [{ url: new URL(tunnel, home).href, pageUrl: home, type: "fetch", what: "envelopes" }];
  // Where a page whose SDK (11.12 or later) says `tunnel: true` posts, as that SDK derives it;
  // served unless TUNNEL_SENTRY_PATHS=off.
  const sentryPath = getTunnelPath(dsn);
  if (sentryPath) requests.push({ url: new URL(sentryPath, home).href, pageUrl: home, type: "fetch", what: "tunnel: true" });
  const reportUri = /report-uri (\S+?)(?:;|$)/.exec(response.headers.get("content-security-policy") ?? "")?.[1];
  if (reportUri) requests.push({ url: new URL(reportUri, home).href, pageUrl: home, type: "cspreport", what: "CSP reports" });
  for (const script of await scriptsOf(html, home)) requests.push({ url: script, pageUrl: home, type: "script", what: "script" });
  return requests;
}

/** Every script the page names, and every one those import, statically or not. */
async function scriptsOf(html: string, home: string): Promise<string[]> {
  const named = [...html.matchAll(/(?:src|href)="([^"]+\.js)"/g)].map((match) => new URL(match[1]!, home));
  const scripts = await scriptsReachable([...named, ...importsOf(html, home)], new URL(home).origin, async (script) => (await fetch(script)).text(), MAX_SCRIPTS);
  return scripts.map((script) => script.href);
}

process.exitCode = await main(process.argv.slice(2));
