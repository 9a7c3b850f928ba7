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
}

/** A list says what it is on its first line: `[Adblock Plus 2.0]`, or a `! Title:` comment. */
const LIST_OPENING = /^(\[adblock|!)/i;

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
  { maxBytes, timeoutMs, maxRules }: ListReadLimits,
): Promise<ListRead> {
  const signal = AbortSignal.timeout(timeoutMs);
  const headers = new Headers({ accept: "text/plain" });
  if (previous?.etag) headers.set("if-none-match", previous.etag);
  if (previous?.lastModified) headers.set("if-modified-since", previous.lastModified);
  let response: Response;
  try {
    response = await fetcher(url, { headers, signal, redirect: "follow" });
  } catch (error) {
    return failedBy(error, signal);
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
    return await keptLines(response, host, maxBytes, maxRules);
  } catch (error) {
    return failedBy(error, signal);
  }
}

function failedBy(error: unknown, signal: AbortSignal): ListRead {
  if (signal.aborted) return { kind: "failed", reason: "timeout", detail: "did not finish in time" };
  // The runtime's words for a server's failure, which the server's own text can be part of.
  return { kind: "failed", reason: "unreachable", detail: (error instanceof Error ? error.message : String(error)).slice(0, 300) };
}

/** The body, line by line: its opening checked, its version read, and the site's lines kept. */
async function keptLines(response: Response, host: string, maxBytes: number, maxRules: number): Promise<ListRead> {
  const keep = siteRuleTest(host);
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  const reader = response.body!.getReader();
  const kept: string[] = [];
  let header: ListHeader = {};
  let pending = "";
  let bytes = 0;
  let lines = 0;
  let rules = 0;
  const take = (raw: string): string | undefined => {
    const line = raw.trim();
    if (lines === 0) {
      if (line === "") return undefined;
      if (!LIST_OPENING.test(line)) return "its first line is not a filter list's";
    }
    lines += 1;
    if (line.includes("\0")) return "it holds a NUL byte";
    if (lines <= 40) header = { ...header, ...headerField(line) };
    if (line !== "" && !line.startsWith("!") && !line.startsWith("[")) rules += 1;
    if (keep(line)) kept.push(line);
    if (kept.length > maxRules) return `it keeps over ${maxRules} rules that can match the site`;
    return undefined;
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (value) {
      bytes += value.byteLength;
      if (bytes > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return { kind: "failed", reason: "too_large", detail: `over ${maxBytes} bytes` };
      }
    }
    let text: string;
    try {
      text = pending + decoder.decode(value, { stream: !done });
    } catch {
      await reader.cancel().catch(() => undefined);
      return { kind: "failed", reason: "not_a_list", detail: "it is not UTF-8 text" };
    }
    const parts = text.split("\n");
    pending = done ? "" : parts.pop()!;
    for (const part of parts) {
      const problem = take(part);
      if (problem) {
        await reader.cancel().catch(() => undefined);
        return { kind: "failed", reason: kept.length > maxRules ? "too_large" : "not_a_list", detail: problem };
      }
    }
    if (done) break;
  }
  if (rules === 0) return { kind: "failed", reason: "not_a_list", detail: "it holds no filter" };
  const etag = response.headers.get("etag");
  const lastModified = response.headers.get("last-modified");
  // A list that names no version of its own (Debian's copies keep `%timestamp%`) goes by its ETag.
  const version = header.version ?? header.modified ?? etag?.replace(/^(W\/)?"(.*)"$/, "$2") ?? "unversioned";
  return { kind: "read", bytes, list: { etag, lastModified, version, rules: kept.join("\n") } };
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
