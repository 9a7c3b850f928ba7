import { Config, FiltersEngine, parseFilters, Request as FilterRequest, type NetworkFilter } from "@ghostery/adblocker";

import { droppedRuleBlocking, droppedRulesOf } from "./dropped-rules.ts";
import { letRequestsThrough, RunOutOfTime } from "./pause.ts";
import { MATCH_BUDGET, matchWays } from "./regex-cost.ts";

/** The engine's preprocessor environment: a `Map` of names to booleans, its class not exported. */
type Env = Parameters<FiltersEngine["updateEnv"]>[0];

/** A request a page of the site sends or loads, as a blocker sees it: never its body. */
export interface WatchedRequest {
  /** What it is for, in the operator's words: `envelopes`, `CSP reports`, `tunnel: true`, `script`. */
  what: string;
  /** Its path and query on the site. */
  path: string;
  type: "xmlhttprequest" | "script" | "csp_report";
  /** Its HTTP method, for rules with `$method=`: `GET` for a script, `POST` for anything else unless said. */
  method?: string;
  /** What the operator does when a list blocks it. */
  remedy: string;
}

/** The rules of one list kept for the site, under the name it is reported by. */
export interface SiteRules {
  list: string;
  version: string;
  rules: string;
}

export interface Block<R extends WatchedRequest = WatchedRequest> {
  request: R;
  /** The rule as the list writes it. */
  rule: string;
  list: string;
  version: string;
  /** The browser whose build of uBlock Origin applies the rule (its `!#if env_…` sections). */
  browsers: string[];
}

/**
 * Ways all the rules run as regular expressions may take on one URL, in all: with each rule at
 * most {@link MATCH_BUDGET}, a quarter of a second of matching at worst, between two pauses that
 * let the isolate's requests through. Today's lists keep about a fifth of it for a site.
 */
const MATCH_BUDGET_PER_URL = 50 * MATCH_BUDGET;

/**
 * uBlock Origin as most blocking visitors run it, on each browser whose lists' `!#if` sections
 * differ: a rule that blocks on any of them loses those visitors' reports.
 */
const BROWSERS: ReadonlyArray<readonly [string, Env]> = [
  ["Chromium", new Map([["ext_ublock", true], ["env_chromium", true]]) as Env],
  ["Firefox", new Map([["ext_ublock", true], ["env_firefox", true]]) as Env],
];

/**
 * Every request of `requests` that the lists block on `https://host/`: one engine over all lists,
 * so that one list's exception (uBO Unbreak's `@@`) lifts another's block, as in the browser; then
 * the rules the engine drops that can still be checked (`dropped-rules.ts`). `unchecked` counts the
 * rest, and the rules left out because their regular expressions could take too long on the URLs
 * asked about (`regex-cost.ts`). Between requests it lets the isolate's other work through, and it
 * throws {@link RunOutOfTime} once `deadline` has passed.
 */
export async function blocksOf<R extends WatchedRequest>(
  lists: readonly SiteRules[],
  requests: readonly R[],
  host: string,
  { deadline, now }: { deadline: number; now: () => number },
): Promise<{ blocks: Block<R>[]; unchecked: number }> {
  const config = new Config({
    loadCosmeticFilters: false,
    loadPreprocessors: true,
    // Kept apart, each with its raw line: optimised, the engine fuses like rules into one
    // (`a <+> b <+> c`), which no list holds and no operator could act on.
    enableOptimizations: false,
    debug: true,
  });
  const origin = `https://${host}`;
  const urls = requests.map((request) => `${origin}${request.path}`);
  const parsed = parseFilters(lists.map((list) => list.rules).join("\n"), config);
  const bounded = boundedMatches(Math.max(...urls.map((url) => url.length)));
  const clock = { deadline, now };
  const networkFilters = await keptWhile(parsed.networkFilters, bounded, (filter) => filter.rawLine?.length ?? 0, clock);
  const engine = new FiltersEngine({ ...parsed, networkFilters, config });
  const dropped = droppedRulesOf(parsed.notSupportedFilters);
  const droppedRules = await keptWhile(dropped.rules, (rule) => bounded(rule.filter), (rule) => rule.raw.length, clock);
  const unchecked = dropped.unchecked + (parsed.networkFilters.length - networkFilters.length) + (dropped.rules.length - droppedRules.length);
  // Each request as the engine takes it, made once for every browser.
  const asked = requests.map((request, index) => ({
    request,
    filterRequest: FilterRequest.fromRawDetails({ url: urls[index]!, sourceUrl: `${origin}/`, type: request.type }),
    method: request.method ?? (request.type === "script" ? "GET" : "POST"),
  }));
  const holderOf = listHolding(lists);
  const found = new Map<string, Block<R>>();
  for (const [browser, env] of BROWSERS) {
    engine.updateEnv(env);
    for (const { request, filterRequest, method } of asked) {
      await letRequestsThrough();
      if (now() > deadline) throw new RunOutOfTime();
      const { match, filter } = engine.match(filterRequest);
      const rule = match && filter ? ruleText(filter) : droppedRuleBlocking(droppedRules, filterRequest, method)?.raw;
      if (rule === undefined) continue;
      const key = `${request.path}\n${request.type}\n${rule}`;
      const holder = holderOf(rule);
      const block = found.get(key) ?? { request, rule, list: holder?.list ?? "?", version: holder?.version ?? "?", browsers: [] };
      block.browsers.push(browser);
      found.set(key, block);
    }
  }
  return { blocks: [...found.values()], unchecked };
}

/**
 * Characters of rules read between two pauses that let the isolate's requests through, each rule
 * counted as at least {@link RULE_WEIGHT}: some milliseconds' work.
 */
const CHARACTERS_BETWEEN_PAUSES = 64 * 1024;
const RULE_WEIGHT = 64;

/** The items `keep` keeps, in order, letting requests through as it goes and stopping at the deadline. */
async function keptWhile<T>(
  items: readonly T[],
  keep: (item: T) => boolean,
  lengthOf: (item: T) => number,
  { deadline, now }: { deadline: number; now: () => number },
): Promise<T[]> {
  const kept: T[] = [];
  let sincePause = 0;
  for (const item of items) {
    sincePause += Math.max(RULE_WEIGHT, lengthOf(item));
    if (sincePause >= CHARACTERS_BETWEEN_PAUSES) {
      sincePause = 0;
      await letRequestsThrough();
      if (now() > deadline) throw new RunOutOfTime();
    }
    if (keep(item)) kept.push(item);
  }
  return kept;
}

/**
 * The test a rule passes to be run against URLs of at most `length` characters: a plain pattern
 * always (the engine compares strings), a regular expression when its ways are within the budget,
 * each alone and all together, in the lists' order.
 */
function boundedMatches(length: number): (filter: NetworkFilter) => boolean {
  let spent = 0;
  return (filter) => {
    if (!filter.isRegex()) return true;
    let source: string;
    try {
      source = filter.getRegex().source;
    } catch {
      // A pattern the runtime will not compile (nested too deep, too large) is one rule unchecked, not a failed run.
      return false;
    }
    const ways = matchWays(source, length);
    if (ways > MATCH_BUDGET || spent + ways > MATCH_BUDGET_PER_URL) return false;
    spent += ways;
    return true;
  };
}

/** The first list that holds a rule, each list's lines indexed once, when a first block asks. */
function listHolding(lists: readonly SiteRules[]): (rule: string) => SiteRules | undefined {
  let index: Map<string, SiteRules> | undefined;
  return (rule) => {
    if (!index) {
      index = new Map();
      for (const list of [...lists].reverse()) for (const line of list.rules.split("\n")) index.set(line, list);
    }
    return index.get(rule);
  };
}

function ruleText(filter: NetworkFilter): string {
  return filter.rawLine ?? filter.toString();
}
