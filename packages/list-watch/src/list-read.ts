import { withoutSecrets } from "./list-name.ts";
import { letRequestsThrough } from "./pause.ts";
import { isListAddress } from "./settings.ts";
import { siteRuleTest } from "./site-rules.ts";

/** What a list's previous read left to ask again with: its validators, and what it kept. */
export interface StoredList {
  etag: string | null;
  lastModified: string | null;
  version: string;
  /** The lines kept for the site (`siteRuleTest`), newline-separated. */
  rules: string;
}

/** Why a list gave nothing to decide with: each a failed check, never "blocked" nor "clear". */
export type ListFailure = "unreachable" | "timeout" | "status" | "too_large" | "not_a_list";

export type ListRead =
  | { kind: "read"; list: StoredList; bytes: number }
  | { kind: "unchanged"; list: StoredList }
  | { kind: "failed"; reason: ListFailure; detail: string };

export interface ListReadLimits {
  maxBytes: number;
  timeoutMs: number;
  /** Lines kept for the site at most: what the engine then parses and holds. */
  maxRules: number;
  /** Characters of those lines at most: 50,000 lines of 32 KiB would not fit in an isolate. */
  maxRuleCharacters: number;
}

/** A list says what it is on its first line: `[Adblock Plus 2.0]`, or a `! Title:` comment. */
const LIST_OPENING = /^(\[adblock|!)/i;

/** Characters in one line at most: today's lists' longest is some 5,500 (a `domain=` of many sites). */
const MAX_LINE = 32 * 1024;

/** Redirects followed at most, each to an address the watch would fetch itself. */
const MAX_REDIRECTS = 5;

/** Bytes read between two pauses that let the isolate's requests through. */
const BYTES_BETWEEN_PAUSES = 256 * 1024;

/**
 * One list, fetched with the validators of its last read (`If-None-Match`, `If-Modified-Since`),
 * read as a stream of lines so that only the lines kept for `host` are ever held: at most
 * `maxBytes` of body within `timeoutMs`, whatever the server sends or withholds.
 */
export async function readList(
  url: string,
  host: string,
  previous: StoredList | undefined,
  fetcher: typeof fetch,
  { maxBytes, timeoutMs, maxRules, maxRuleCharacters }: ListReadLimits,
): Promise<ListRead> {
  const signal = AbortSignal.timeout(timeoutMs);
  const headers = new Headers({ accept: "text/plain" });
  if (previous?.etag) headers.set("if-none-match", previous.etag);
  if (previous?.lastModified) headers.set("if-modified-since", previous.lastModified);
  let response: Response;
  try {
    const answer = await fetchWithinAddresses(url, { headers, signal }, fetcher);
    if (typeof answer === "string") return { kind: "failed", reason: "status", detail: answer };
    response = answer;
  } catch (error) {
    return failedBy(error, signal, url);
  }
  if (response.status === 304 && previous) return { kind: "unchanged", list: previous };
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    return { kind: "failed", reason: "status", detail: `answered ${response.status}` };
  }
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    await response.body.cancel().catch(() => undefined);
    return { kind: "failed", reason: "too_large", detail: `declares ${declared} bytes, over ${maxBytes}` };
  }
  try {
    return await keptLines(response, new ListLines(host, maxRules, maxRuleCharacters), maxBytes);
  } catch (error) {
    return failedBy(error, signal, url);
  }
}

/**
 * The answer at `url`, its redirects followed one at a time so that each is held to the addresses
 * `TUNNEL_WATCH_LISTS` accepts: `fetch` would follow `https:` to plain `http:` anywhere. A string
 * says why there is no answer to read.
 */
async function fetchWithinAddresses(url: string, init: RequestInit, fetcher: typeof fetch): Promise<Response | string> {
  let at = url;
  for (let redirects = 0; ; redirects += 1) {
    const response = await fetcher(at, { ...init, redirect: "manual" });
    const location = response.headers.get("location");
    if (response.status < 300 || response.status > 399 || response.status === 304 || location === null) return response;
    await response.body?.cancel().catch(() => undefined);
    if (redirects === MAX_REDIRECTS) return `redirects more than ${MAX_REDIRECTS} times`;
    const next = URL.parse(location, at);
    if (!next || !isListAddress(next)) return `redirects to an address the watch does not fetch (only https://, or http:// on loopback)`;
    at = next.href;
  }
}

function failedBy(error: unknown, signal: AbortSignal, url: string): ListRead {
  if (signal.aborted) return { kind: "failed", reason: "timeout", detail: "did not finish in time" };
  // The runtime's words for a server's failure, which the server's own text and the address can be part of.
  return { kind: "failed", reason: "unreachable", detail: withoutSecrets(error instanceof Error ? error.message : String(error), url).slice(0, 300) };
}

/** A list's lines as they are taken: its opening checked, its version read, the site's lines kept. */
class ListLines {
  readonly kept: string[] = [];
  header: ListHeader = {};
  /** Lines that are filters, whether kept or not: a list with none is no list. */
  filters = 0;
  private lines = 0;
  private keptCharacters = 0;
  private readonly keep: (line: string) => boolean;
  private readonly maxRules: number;
  private readonly maxRuleCharacters: number;

  constructor(host: string, maxRules: number, maxRuleCharacters: number) {
    this.keep = siteRuleTest(host);
    this.maxRules = maxRules;
    this.maxRuleCharacters = maxRuleCharacters;
  }

  /** Takes one line; says why the list is refused, when it is. */
  take(raw: string): { reason: ListFailure; detail: string } | undefined {
    if (raw.length > MAX_LINE) return { reason: "not_a_list", detail: `a line is over ${MAX_LINE} characters` };
    const line = raw.trim();
    if (this.lines === 0) {
      if (line === "") return undefined;
      if (!LIST_OPENING.test(line)) return { reason: "not_a_list", detail: "its first line is not a filter list's" };
    }
    this.lines += 1;
    if (line.includes("\0")) return { reason: "not_a_list", detail: "it holds a NUL byte" };
    if (this.lines <= 40) this.header = { ...this.header, ...headerField(line) };
    if (line !== "" && !line.startsWith("!") && !line.startsWith("[")) this.filters += 1;
    if (this.keep(line)) {
      this.kept.push(line);
      this.keptCharacters += line.length + 1;
    }
    if (this.kept.length > this.maxRules) return { reason: "too_large", detail: `it keeps over ${this.maxRules} rules that can match the site` };
    if (this.keptCharacters > this.maxRuleCharacters) return { reason: "too_large", detail: `it keeps over ${this.maxRuleCharacters} characters of rules that can match the site` };
    return undefined;
  }
}

/** The body, line by line, as `list` takes it, within `maxBytes`. */
async function keptLines(response: Response, list: ListLines, maxBytes: number): Promise<ListRead> {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  const reader = response.body!.getReader();
  let pending = "";
  let bytes = 0;
  let sincePause = 0;
  const failed = async ({ reason, detail }: { reason: ListFailure; detail: string }): Promise<ListRead> => {
    await reader.cancel().catch(() => undefined);
    return { kind: "failed", reason, detail };
  };
  for (;;) {
    const { done, value } = await reader.read();
    bytes += value?.byteLength ?? 0;
    sincePause += value?.byteLength ?? 0;
    if (bytes > maxBytes) return failed({ reason: "too_large", detail: `over ${maxBytes} bytes` });
    let text: string;
    try {
      text = decoder.decode(value, { stream: !done });
    } catch {
      return failed({ reason: "not_a_list", detail: "it is not UTF-8 text" });
    }
    // Each line taken once it ends: only the unfinished line is carried over, and it is bounded,
    // so that a list of one long line costs what a list of many short ones does.
    let start = 0;
    for (let end = text.indexOf("\n"); end >= 0; end = text.indexOf("\n", start)) {
      const problem = list.take(pending + text.slice(start, end));
      pending = "";
      start = end + 1;
      if (problem) return failed(problem);
    }
    pending += text.slice(start);
    // The last line, or an unfinished one already too long, which `take` refuses.
    if ((done && pending !== "") || pending.length > MAX_LINE) {
      const problem = list.take(pending);
      if (problem) return failed(problem);
    }
    if (done) break;
    if (sincePause >= BYTES_BETWEEN_PAUSES) {
      sincePause = 0;
      await letRequestsThrough();
    }
  }
  if (list.filters === 0) return { kind: "failed", reason: "not_a_list", detail: "it holds no filter" };
  const etag = response.headers.get("etag");
  const lastModified = response.headers.get("last-modified");
  // A list that names no version of its own (Debian's copies keep `%timestamp%`) goes by its ETag.
  const version = list.header.version ?? list.header.modified ?? etag?.replace(/^(W\/)?"(.*)"$/, "$2") ?? "unversioned";
  return { kind: "read", bytes, list: { etag, lastModified, version, rules: list.kept.join("\n") } };
}

/** How a list names its own version, in its opening comments. */
interface ListHeader {
  version?: string;
  modified?: string;
}

/** `! Version: 202611281200` and `! Last modified: …`; a placeholder (`%timestamp%`) is none. */
function headerField(line: string): ListHeader {
  const field = /^!\s*(Version|Last modified)\s*:\s*(.{1,64})$/i.exec(line);
  if (!field || field[2]!.includes("%")) return {};
  return { [field[1]!.toLowerCase() === "version" ? "version" : "modified"]: field[2]!.trim() };
}
