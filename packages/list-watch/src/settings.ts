import { ConfigError, variableReader } from "@edge-monitoring/tunnel";

/**
 * The lists uBlock Origin enables by default, at the addresses its own `assets.json` fetches them
 * from: EasyList and EasyPrivacy (also the base of Brave's, AdGuard's and Ghostery's), and uBO's
 * filters, badware, privacy, quick fixes and unbreak lists.
 */
export const DEFAULT_WATCH_LISTS: readonly string[] = [
  "https://ublockorigin.github.io/uAssets/thirdparties/easylist.txt",
  "https://ublockorigin.github.io/uAssets/thirdparties/easyprivacy.txt",
  "https://ublockorigin.github.io/uAssets/filters/filters.txt",
  "https://ublockorigin.github.io/uAssets/filters/badware.txt",
  "https://ublockorigin.github.io/uAssets/filters/privacy.txt",
  "https://ublockorigin.github.io/uAssets/filters/quick-fixes.txt",
  "https://ublockorigin.github.io/uAssets/filters/unbreak.txt",
];

/** Lists one check fetches at most: each is a subrequest, and the defaults are seven. */
export const MAX_WATCH_LISTS = 20;

/** The check's settings; `undefined` from {@link readWatchSettings} when it is off. */
export interface WatchSettings {
  /** The site's public host, which a Cron Trigger's run has no request to learn from. */
  host: string;
  lists: readonly string[];
}

/** The watch's Worker variables, as wrangler gives them: text, or a number or boolean from an unquoted TOML value. */
export type WatchVariables = Partial<Record<"TUNNEL_WATCH" | "TUNNEL_WATCH_LISTS" | "TUNNEL_WATCH_HOST", string | number | boolean>>;

/** A DNS name: letters, digits and hyphens in dot-separated labels, nothing else. */
const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Loopback, where tests and `npm start` serve lists over plain HTTP. */
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * `TUNNEL_WATCH` (`on`, or off when empty), `TUNNEL_WATCH_HOST` and `TUNNEL_WATCH_LISTS`, checked:
 * throws a {@link ConfigError} naming the first that is wrong, so that the Worker does not start.
 */
export function readWatchSettings(env: WatchVariables): WatchSettings | undefined {
  const read = variableReader<keyof WatchVariables>(env);
  if (!read.onOrOff("TUNNEL_WATCH", false)) return undefined;
  const host = read.text("TUNNEL_WATCH_HOST").toLowerCase();
  if (host === "") throw new ConfigError("TUNNEL_WATCH_HOST", "must be set while TUNNEL_WATCH is on: the site's public host, such as example.com, which the lists are asked about");
  if (!HOST_NAME.test(host)) throw new ConfigError("TUNNEL_WATCH_HOST", `must be the site's host alone, such as example.com, got "${host}"`);
  const given = read.list("TUNNEL_WATCH_LISTS");
  const lists = given.length === 0 ? DEFAULT_WATCH_LISTS : given.map(listUrl);
  if (new Set(lists).size !== lists.length) throw new ConfigError("TUNNEL_WATCH_LISTS", "names a list twice");
  if (lists.length > MAX_WATCH_LISTS) throw new ConfigError("TUNNEL_WATCH_LISTS", `names ${lists.length} lists, over ${MAX_WATCH_LISTS}`);
  return { host, lists };
}

/** An `https:` URL, or `http:` on loopback; nothing a credential could ride in. */
function listUrl(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    // Said below.
  }
  if (!url || !isListAddress(url)) {
    throw new ConfigError("TUNNEL_WATCH_LISTS", `must be a list of https:// addresses of filter lists (http:// only on loopback), got "${value}"`);
  }
  return url.href;
}

/**
 * Where the watch fetches a list from, and where it follows a redirect to: `https:`, or `http:` on
 * loopback, with no user name or password.
 */
export function isListAddress(url: URL): boolean {
  const secure = url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK.has(url.hostname));
  return secure && url.username === "" && url.password === "";
}
