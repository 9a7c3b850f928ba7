import type { TunnelDescription } from "@edge-monitoring/tunnel";

import { listName } from "./list-name.ts";
import { RunOutOfTime } from "./pause.ts";
import { readList, type ListFailure, type ListReadLimits } from "./list-read.ts";
import type { WatchSettings } from "./settings.ts";
import { memoryListStore, type ListStore } from "./store.ts";
import type { Block, SiteRules, WatchedRequest } from "./verdicts.ts";

/**
 * The version of the `tunnel_watch` line's fields, its `v`: a field is only ever added within a
 * version, as in the tunnel's own lines.
 */
const WATCH_LINE_VERSION = 1;

/** The one line of each run: what a Workers Observability alert counts, and what the host turns into a check-in. */
export interface WatchLine {
  event: "tunnel_watch";
  v: typeof WATCH_LINE_VERSION;
  /** `clear`: no list blocks any request; `blocked`: one does; `failed`: a list or the engine gave no verdict, so nothing is known. */
  status: "clear" | "blocked" | "failed";
  host: string;
  requests_checked: number;
  lists: WatchedList[];
  /** Each rule that blocks a request, at most {@link MAX_BLOCKS_SAID}; `blocks_found` counts them all. */
  blocks: BlockLine[];
  blocks_found: number;
  /**
   * Rules kept for the site that the engine cannot read (uBO's `header=`, and other options it
   * lacks): neither blocking nor clear. Above 0, `npm run check:blockers` asks uBO's own engine.
   */
  rules_unchecked: number | null;
  /** Why the run failed, when it did. */
  reason: string | null;
  duration_ms: number;
}

export interface WatchedList {
  /** The list's address, less its query and any path segment that looks like a token. */
  url: string;
  /** `read`: fetched in full; `unchanged`: the server said 304; otherwise why it gave nothing. */
  outcome: "read" | "unchanged" | ListFailure;
  version: string | null;
  rules_kept: number | null;
  detail: string | null;
}

export interface BlockLine {
  what: string;
  path: string;
  rule: string;
  list: string;
  version: string;
  browsers: string[];
  /** What the operator does about it. */
  remedy: string;
}

/** Rules said in one line and one run's messages, at most: a hostile list could match with thousands. */
export const MAX_BLOCKS_SAID = 10;

/** A rule or a version as written in the line: a list's text is a stranger's. */
const MAX_TEXT = 300;

/** What one run may spend: per list, its bytes and time; in all, the rules kept (lines and characters) and the time. */
export interface WatchLimits extends ListReadLimits {
  /** The whole run's time: a Cron Trigger's run is cut off at 15 minutes. */
  runMs: number;
}

/** Today's lists keep some 5,700 rules, 120 KB, for a site; lists that keep far more are not to be trusted. */
const LIMITS: WatchLimits = { maxBytes: 8 * 1024 * 1024, timeoutMs: 60_000, maxRules: 50_000, maxRuleCharacters: 2 * 1024 * 1024, runMs: 10 * 60_000 };

export interface WatchOptions {
  settings: WatchSettings;
  /** What the site's pages send and load; a function may fail, which fails the run. */
  requests: readonly WatchedRequest[] | (() => Promise<readonly WatchedRequest[]>);
  store?: ListStore;
  fetch?: typeof fetch;
  now?: () => number;
  limits?: Partial<WatchLimits>;
  log?: (line: WatchLine) => void;
}

const ROUTE_REMEDY =
  "set TUNNEL_ROUTE to a new neutral path, keep the old one in TUNNEL_RETIRED_ROUTES for a day, and deploy: pages loaded after that post to the new route";

/**
 * What the tunnel's pages post to, from its start line: the route (with its query when it is
 * `/monitoring`), its CSP report path when it has one, and the paths Sentry's `tunnel: true` SDK
 * derives. Routes served only for old pages (`TUNNEL_RETIRED_ROUTES`, `/monitoring` when another
 * route is set) are not asked about: no new page posts to them.
 */
export function watchedRequestsOf(description: TunnelDescription): WatchedRequest[] {
  const requests: WatchedRequest[] = [];
  if (description.pages_post_to) {
    const route = description.pages_post_to;
    requests.push({ what: "envelopes", path: route, type: "xmlhttprequest", remedy: ROUTE_REMEDY });
    const reportPath = description.csp_reports_served[description.routes_served.indexOf(new URL(route, "https://host.invalid").pathname)];
    if (reportPath) requests.push({ what: "CSP reports", path: reportPath, type: "csp_report", remedy: ROUTE_REMEDY });
  }
  for (const path of description.sentry_sdk_paths_served) {
    requests.push({
      what: "tunnel: true",
      path,
      type: "xmlhttprequest",
      remedy: "give pages whose Sentry SDK says `tunnel: true` the tunnel's route instead (`tunnel: \"<route>\"`), or set TUNNEL_SENTRY_PATHS=off if none do",
    });
  }
  return requests;
}

/**
 * One check: each list fetched (conditionally, from `store`'s last read) and cut to what can match
 * the site, then one engine asked about every request. A list that gives nothing fails the whole
 * run, which then says neither `blocked` nor `clear`. Writes its line and returns it.
 */
export async function watchBlockLists(options: WatchOptions): Promise<WatchLine> {
  const { settings, store = memoryListStore(), fetch: fetcher = fetch, now = Date.now, log = (line) => console.log(JSON.stringify(line)) } = options;
  const started = now();
  const line: WatchLine = {
    event: "tunnel_watch",
    v: WATCH_LINE_VERSION,
    status: "failed",
    host: settings.host,
    requests_checked: 0,
    lists: [],
    blocks: [],
    blocks_found: 0,
    rules_unchecked: null,
    reason: null,
    duration_ms: 0,
  };
  const finish = (changes: Partial<WatchLine>) => {
    Object.assign(line, changes, { duration_ms: now() - started });
    log(line);
    return line;
  };
  let requests: readonly WatchedRequest[];
  try {
    requests = typeof options.requests === "function" ? await options.requests() : options.requests;
  } catch (error) {
    return finish({ reason: `the requests to check could not be listed: ${messageOf(error)}` });
  }
  if (requests.length === 0) return finish({ reason: "there is no request to check: the tunnel has no route pages post to" });
  const limits = { ...LIMITS, ...options.limits };
  const deadline = started + limits.runMs;
  const lists = await readLists(settings, store, fetcher, limits, line, deadline, now);
  const failed = line.lists.filter((list) => list.detail !== null);
  if (failed.length > 0) return finish({ reason: `${failed.length} of ${line.lists.length} lists gave no verdict: ${failed.map((list) => `${list.url} ${list.detail}`).join("; ")}` });
  let verdict: { blocks: Block[]; unchecked: number };
  try {
    // The engine is loaded here, not with the module: a Worker's isolates start without evaluating
    // it, and only the Cron Trigger's run pays for it.
    const { blocksOf } = await import("./verdicts.ts");
    verdict = await blocksOf(lists, requests, settings.host, { deadline, now });
  } catch (error) {
    if (error instanceof RunOutOfTime) return finish({ reason: `the run's time (${limits.runMs / 1000} s) was spent before the engine had been asked about every request` });
    return finish({ reason: `the filter engine failed: ${messageOf(error)}` });
  }
  const { blocks, unchecked } = verdict;
  return finish({
    status: blocks.length > 0 ? "blocked" : "clear",
    requests_checked: requests.length,
    blocks: blocks.slice(0, MAX_BLOCKS_SAID).map(blockLine),
    blocks_found: blocks.length,
    rules_unchecked: unchecked,
  });
}

/**
 * One list at a time, so that only one body is ever being read, each within what is left of the
 * run's time and of its rules; each outcome said in `line.lists`.
 */
async function readLists(
  settings: WatchSettings,
  store: ListStore,
  fetcher: typeof fetch,
  limits: WatchLimits,
  line: WatchLine,
  deadline: number,
  now: () => number,
): Promise<SiteRules[]> {
  const lists: SiteRules[] = [];
  let rules = 0;
  let characters = 0;
  for (const url of settings.lists) {
    const name = listName(url);
    const left = deadline - now();
    if (left <= 0) {
      line.lists.push({ url: name, outcome: "timeout", version: null, rules_kept: null, detail: "the run's time was spent before it" });
      continue;
    }
    const previous = await store.get(settings.host, url).catch(() => undefined);
    const read = await readList(url, settings.host, previous, fetcher, {
      ...limits,
      timeoutMs: Math.min(limits.timeoutMs, left),
      maxRules: limits.maxRules - rules,
      maxRuleCharacters: limits.maxRuleCharacters - characters,
    });
    if (read.kind === "failed") {
      line.lists.push({ url: name, outcome: read.reason, version: null, rules_kept: null, detail: read.detail });
      continue;
    }
    if (read.kind === "read") await store.put(settings.host, url, read.list).catch(() => undefined);
    const version = read.list.version.slice(0, MAX_TEXT);
    const kept = read.list.rules === "" ? 0 : read.list.rules.split("\n").length;
    // A list read before, unchanged, counts too: the engine parses every list's rules at once.
    if (rules + kept > limits.maxRules || characters + read.list.rules.length > limits.maxRuleCharacters) {
      const over = rules + kept > limits.maxRules ? `${limits.maxRules} rules` : `${limits.maxRuleCharacters} characters of rules`;
      line.lists.push({ url: name, outcome: "too_large", version: null, rules_kept: kept, detail: `the lists keep over ${over} that can match the site` });
      continue;
    }
    rules += kept;
    characters += read.list.rules.length + 1;
    line.lists.push({ url: name, outcome: read.kind, version, rules_kept: kept, detail: null });
    lists.push({ list: name, version, rules: read.list.rules });
  }
  return lists;
}

function blockLine(block: Block): BlockLine {
  return {
    what: block.request.what,
    path: block.request.path,
    rule: block.rule.slice(0, MAX_TEXT),
    list: block.list,
    version: block.version,
    browsers: block.browsers,
    remedy: block.request.remedy,
  };
}

function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, MAX_TEXT);
}
