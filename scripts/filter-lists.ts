// Filter lists in the real engines of uBlock Origin and Ghostery, in Node: `npm run check:blockers`
// asks them about a running site, and the blocker tests about the app's pages.
import { readFileSync } from "node:fs";
import { basename, join } from "node:path";

import { FiltersEngine, Request as FilterRequest } from "@ghostery/adblocker";
import { StaticNetFilteringEngine } from "@gorhill/ubo-core";

/** Where Debian's `webext-ublock-origin-chromium` keeps the lists uBlock Origin enables by default. */
const BUNDLED_LISTS_DIR = "/usr/share/chromium/extensions/ublock-origin/assets";

/** uBlock Origin's default network lists as Debian bundles them: EasyList, EasyPrivacy (also Brave's and AdGuard's base), and uBO's own. */
export const BUNDLED_LISTS = [
  "thirdparties/easylist/easylist.txt",
  "thirdparties/easylist/easyprivacy.txt",
  "ublock/filters.min.txt",
  "ublock/privacy.min.txt",
  "ublock/badware.min.txt",
  "ublock/quick-fixes.min.txt",
  "ublock/unbreak.min.txt",
].map((list) => join(BUNDLED_LISTS_DIR, list));

/** A list by its name (a file's or an address's last segment) and its text. */
export interface FilterList {
  name: string;
  raw: string;
}

/** A list file's name and text. */
export const listFile = (file: string): FilterList => ({ name: basename(file), raw: readFileSync(file, "utf8") });

/** A request as a blocker sees it: never its body. `type` is the browser's resource type. */
export interface BlockerRequest {
  url: string;
  /** The page that sends it. */
  pageUrl: string;
  type: string;
}

export interface Verdict {
  engine: "uBlock Origin" | "Ghostery";
  blocked: boolean;
  /** The filter that blocked it, as the engine reports it. */
  rule: string | undefined;
  /** The list that holds that filter. */
  list: string | undefined;
}

export interface FilterEngines {
  lists: readonly string[];
  verdicts(request: BlockerRequest): Verdict[];
}

/** Playwright's and Chromium's resource types, in the webRequest words both engines use. */
const ENGINE_TYPES: Record<string, string> = {
  document: "main_frame",
  fetch: "xmlhttprequest",
  xhr: "xmlhttprequest",
  cspreport: "csp_report",
  eventsource: "other",
  manifest: "other",
  texttrack: "media",
};

/**
 * The real engines of uBlock Origin and Ghostery, each fed the same lists. uBO's engine is one per
 * process, so a second call replaces the lists of the first.
 */
export async function loadFilterEngines(lists: readonly FilterList[] = BUNDLED_LISTS.map(listFile)): Promise<FilterEngines> {
  const ubo = await StaticNetFilteringEngine.create();
  await ubo.useLists(lists);
  // One Ghostery engine per list, so that a verdict names its list.
  const ghostery = lists.map((list) => ({ name: list.name, engine: FiltersEngine.parse(list.raw, { loadCosmeticFilters: false, debug: true }) }));
  return {
    lists: lists.map((list) => list.name),
    verdicts({ url, pageUrl, type }) {
      const engineType = ENGINE_TYPES[type] ?? type;
      const uboBlocked = ubo.matchRequest({ originURL: pageUrl, url, type: engineType }) === 1;
      const uboRule = uboBlocked ? ubo.toLogData()?.raw : undefined;
      const request = FilterRequest.fromRawDetails({ url, sourceUrl: pageUrl, type: engineType as Parameters<typeof FilterRequest.fromRawDetails>[0]["type"] });
      const hit = ghostery.map(({ name, engine }) => ({ name, match: engine.match(request) })).find(({ match }) => match.match);
      return [
        { engine: "uBlock Origin", blocked: uboBlocked, rule: uboRule, list: uboRule && listHolding(uboRule, lists) },
        { engine: "Ghostery", blocked: hit !== undefined, rule: hit?.match.filter?.toString(), list: hit?.name },
      ];
    },
  };
}

/** uBO reports a filter in its own spelling (`$xhr` for `$xmlhttprequest`): its pattern finds the list. */
function listHolding(rule: string, lists: readonly FilterList[]): string | undefined {
  const pattern = rule.split("$")[0]!;
  return lists.find((list) => list.raw.split("\n").some((line) => line.startsWith(pattern)))?.name;
}
