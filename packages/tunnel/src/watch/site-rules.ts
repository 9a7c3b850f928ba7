/**
 * Which lines of a filter list can decide a request from one site to itself: the rest are dropped
 * before the engine parses anything, which is most of its cost (EasyPrivacy's 56,000 lines are
 * mostly other hosts' and third-party rules). Dropping is only ever on what a line says for sure;
 * anything unclear is kept, for the engine to decide.
 */

/** Cosmetic and HTML filters (`##`, `#@#`, `#?#`, `#$#`, `#%#`, `#+js`, `$$`): never a request's verdict. */
const COSMETIC = /#[@?$%]{0,2}#|#\+js\(|\$@?\$/;

/** A network filter's options start at its last `$`, unless that `$` sits in a regular expression's body. */
function optionsOf(rule: string): string[] {
  const at = rule.lastIndexOf("$");
  if (at <= 0 || (rule.startsWith("/") && rule.indexOf("/", 1) > at)) return [];
  return rule.slice(at + 1).split(",");
}

/** Whether `host` is `domain` or under it; `domain` may end in `.*` (an entity: `example.*`). */
function isUnder(host: string, domain: string): boolean {
  if (domain.endsWith(".*")) {
    const name = domain.slice(0, -2);
    return host.split(".").some((_, index, labels) => labels.slice(index, -1).join(".") === name);
  }
  return host === domain || host.endsWith(`.${domain}`);
}

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
 * cosmetic filters go; network filters anchored to another host, third-party-only filters, and
 * filters whose `domain=`, `from=` or `to=` leave this host out go too. Preprocessor lines
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
    for (const option of optionsOf(rule)) {
      const [name = "", value = ""] = option.split("=", 2);
      if (name === "third-party" || name === "3p") return false;
      if ((name === "domain" || name === "from" || name === "to") && !domainsAllow(value, site)) return false;
    }
    return true;
  };
}
