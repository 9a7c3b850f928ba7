import { NetworkFilter, parseFilter, type NonSupportedFilter, type Request as FilterRequest } from "@ghostery/adblocker";

import { optionsAt } from "./site-rules.ts";

/**
 * A rule Ghostery's engine drops for an option of uBlock Origin's it lacks, which the watch can
 * still check exactly for a site's requests to itself: `$method=` (checked here against the
 * request's method), `strict1p` (the same as `1p` for a request to the page's own host),
 * `reason=` (only the text uBO shows), and a `to=` without regular expressions (`siteRuleTest`
 * kept the rule only if it lets the site's host in). A site-specific rule against a tunnel's POSTs
 * is exactly what `$method=post` would say, and uBO's rules against randomised script paths are
 * `strict1p`.
 */
export interface DroppedRule {
  /** As the list writes it. */
  raw: string;
  filter: NetworkFilter;
  /** The methods `$method=` names (upper case); none: every method. */
  allowed: ReadonlySet<string>;
  denied: ReadonlySet<string>;
}

/** The rules the engine dropped that can be checked with those options set aside, and how many are left unchecked. */
export function droppedRulesOf(unsupported: readonly NonSupportedFilter[]): { rules: DroppedRule[]; unchecked: number } {
  const rules: DroppedRule[] = [];
  for (const { filter: raw } of unsupported) {
    const rule = checkable(raw);
    if (rule) rules.push(rule);
  }
  return { rules, unchecked: unsupported.length - rules.length };
}

function checkable(raw: string): DroppedRule | undefined {
  const at = optionsAt(raw);
  if (at < 0) return undefined;
  const methods: string[] = [];
  const options: string[] = [];
  for (const option of raw.slice(at).split(",")) {
    if (option.startsWith("method=")) methods.push(...option.slice("method=".length).toUpperCase().split("|"));
    else if (option === "strict1p") options.push("1p");
    else if (!option.startsWith("reason=") && !(option.startsWith("to=") && !option.includes("/"))) options.push(option);
  }
  const filter = parseFilter(raw.slice(0, at - 1) + (options.length > 0 ? `$${options.join(",")}` : ""));
  // An exception is left out: lifting another list's block is beyond this check.
  if (!(filter instanceof NetworkFilter) || filter.isException()) return undefined;
  return {
    raw,
    filter,
    allowed: new Set(methods.filter((name) => !name.startsWith("~"))),
    denied: new Set(methods.filter((name) => name.startsWith("~")).map((name) => name.slice(1))),
  };
}

/** The first of `rules` that blocks `request`, sent with `method`. */
export function droppedRuleBlocking(rules: readonly DroppedRule[], request: FilterRequest, method: string): DroppedRule | undefined {
  return rules.find(
    (rule) => (rule.allowed.size === 0 || rule.allowed.has(method)) && !rule.denied.has(method) && rule.filter.match(request),
  );
}
