/**
 * Which lines of a filter list can decide a request from one site to itself: the rest are dropped
 * before the engine parses anything, which is most of its cost (EasyPrivacy's 56,000 lines are
 * mostly other hosts' and third-party rules). Dropping is only ever on what a line says for sure;
 * anything unclear is kept, for the engine to decide.
 */

/**
 * Raised whenever what {@link siteRuleTest} keeps changes (a test pins its output to this): a
 * list's stored lines are reused on a 304 only under the same version (`store.ts`), so that an
 * upgrade reads every list again rather than judging by lines the old code kept.
 */
export const SITE_RULES_VERSION = 2;

/** Cosmetic and HTML filters (`##`, `#@#`, `#?#`, `#$#`, `#%#`, `#+js`, `$$`): never a request's verdict. */
const COSMETIC = /#[@?$%]{0,2}#|#\+js\(|\$@?\$/;

/** What follows a `$` that starts options: an option's name, then `=`, `,` or the end. */
const OPTION_START = /^~?[a-z0-9_-]+(?:=|,|$)/i;

/**
 * Where a network filter's options start (after its `$`; `$popup,domain=…` is all options), or -1
 * when it has none. A `$` is also a regular expression's anchor and may sit in an option's value
 * (`header=server:/^x$/`): a regular expression's options follow the first unescaped `/$`, and
 * otherwise they follow the first `$` that an option's name follows.
 */
export function optionsAt(rule: string): number {
  if (rule.startsWith("/")) {
    for (let index = 1; index < rule.length - 1; index += 1) {
      if (rule[index] === "\\") index += 1;
      else if (rule[index] === "/" && rule[index + 1] === "$") return index + 2;
    }
  }
  for (let at = rule.indexOf("$"); at >= 0; at = rule.indexOf("$", at + 1)) {
    if (OPTION_START.test(rule.slice(at + 1))) return at + 1;
  }
  return -1;
}

function optionsOf(rule: string): string[] {
  const at = optionsAt(rule);
  return at < 0 ? [] : rule.slice(at).split(",");
}

/** Whether `host` is `domain` or under it; `domain` may end in `.*` (an entity: `example.*`). */
function isUnder(host: string, domain: string): boolean {
  if (domain.endsWith(".*")) {
    const name = domain.slice(0, -2);
    return host.split(".").some((_, index, labels) => labels.slice(index, -1).join(".") === name);
  }
  return host === domain || host.endsWith(`.${domain}`);
}

/**
 * Resource types a site's pages send to it for monitoring, in both engines' spellings: the
 * route's and Sentry's paths (`xhr`), the scripts, and CSP reports (`other`, `ping` in some
 * browsers). A rule limited to other types (`$popup`, `$image`, `$doc`) cannot match them.
 */
const OUR_TYPES = new Set(["xhr", "xmlhttprequest", "script", "other", "ping", "beacon", "all"]);
const TYPES = new Set([...OUR_TYPES, "popup", "image", "doc", "document", "frame", "subdocument", "css", "stylesheet", "media", "font", "object", "websocket", "webrtc", "genericblock", "inline-script", "inline-font", "popunder"]);

/** Options that change a document or a URL rather than block a request to the site: never a verdict here. */
const NOT_BLOCKING = new Set(["permissions", "urlskip", "uritransform", "removeparam", "csp", "replace", "redirect-rule", "cname"]);

/** A `domain=`/`from=`/`to=` value: whether it lets the rule apply on `host`. Regular expressions are kept. */
function domainsAllow(value: string, host: string): boolean {
  const entries = value.split("|").filter((entry) => entry !== "");
  if (entries.some((entry) => entry.replace(/^~/, "").startsWith("/"))) return true;
  if (entries.some((entry) => entry.startsWith("~") && isUnder(host, entry.slice(1)))) return false;
  const included = entries.filter((entry) => !entry.startsWith("~"));
  return included.length === 0 || included.some((entry) => isUnder(host, entry));
}

/** The host a rule is anchored to (`||host^…`, `|https://host/…`), or `undefined` when it has none or a wildcard. */
function anchoredHost(pattern: string): string | undefined {
  const start = pattern.startsWith("||") ? 2 : /^\|[a-z]+:\/\//.test(pattern) ? pattern.indexOf("//") + 2 : -1;
  if (start < 0) return undefined;
  const host = /^[a-z0-9.-]+/i.exec(pattern.slice(start))?.[0]?.toLowerCase();
  // `||exam*` or `||example.com` then more of the host: not a whole host, so the engine decides.
  const next = pattern.charAt(start + (host?.length ?? 0));
  return host && (next === "" || "^/:$|".includes(next)) ? host : undefined;
}

/**
 * The test a list's lines pass to be kept for requests from `host` to itself: comments and
 * cosmetic filters go; network filters anchored to another host, third-party-only filters,
 * filters whose `domain=`, `from=` or `to=` leave this host out, filters only for resource types
 * the pages never send it, and filters that rewrite rather than block go too. Preprocessor lines
 * (`!#if`, `!#else`, `!#endif`) stay, so that the engine still knows which rules a browser skips.
 */
export function siteRuleTest(host: string): (line: string) => boolean {
  const site = host.toLowerCase();
  return (line) => {
    if (line === "" || line.startsWith("[")) return false;
    if (line.startsWith("!")) return /^!#(if |else$|endif$)/.test(line);
    if (COSMETIC.test(line)) return false;
    const rule = line.startsWith("@@") ? line.slice(2) : line;
    const anchored = anchoredHost(rule);
    if (anchored !== undefined && !isUnder(site, anchored)) return false;
    const options = optionsOf(rule);
    for (const option of options) {
      const [name = "", value = ""] = option.split("=", 2);
      if (name === "third-party" || name === "3p" || name === "strict3p" || NOT_BLOCKING.has(name)) return false;
      if ((name === "domain" || name === "from" || name === "to") && !domainsAllow(value, site)) return false;
    }
    const types = options.filter((option) => TYPES.has(option));
    return types.length === 0 || types.some((type) => OUR_TYPES.has(type));
  };
}
