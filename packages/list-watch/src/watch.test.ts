import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { tunnelUnderTest } from "@edge-monitoring/tunnel/testing";

import { watchMessages } from "./messages.ts";
import { memoryListStore } from "./store.ts";
import type { WatchedRequest } from "./verdicts.ts";
import { MAX_BLOCKS_SAID, watchBlockLists, watchedRequestsOf, type WatchLine, type WatchOptions } from "./watch.ts";

const HOST = "app.example.com";
const ROUTE = "/6b1xzn8op8";
const REQUESTS: WatchedRequest[] = [
  { what: "envelopes", path: ROUTE, type: "xmlhttprequest", remedy: "set TUNNEL_ROUTE" },
  { what: "script", path: "/build/_shared/sdk.client-KICEP5M6.js", type: "script", remedy: "rename the chunk" },
];
const PRIVACY = "https://lists.test/privacy.txt";
const UNBREAK = "https://lists.test/unbreak.txt";

/** A list as the lists' servers publish them: a title, a version, rules. */
const list = (title: string, ...rules: string[]) => `! Title: ${title}\n! Version: 202611281200\n! Last modified: Sat, 28 Nov 2026 12:00:00 +0000\n${rules.join("\n")}\n`;

const TODAY = list("Privacy", "/monitoring?o=$xmlhttprequest", "||tracker.net^$third-party", "||other.org/6b1xzn8op8$xhr", "example.org##.banner");

/** A list server on `fetch`: each URL's body, ETags, and what it was asked. */
function listServer(bodies: Record<string, string | ((init: RequestInit | undefined) => Response | Promise<Response>)>) {
  const asked: { url: string; ifNoneMatch: string | null }[] = [];
  const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    const ifNoneMatch = new Headers(init?.headers).get("if-none-match");
    asked.push({ url, ifNoneMatch });
    const body = bodies[url];
    if (typeof body === "function") return body(init);
    if (body === undefined) return new Response("not found", { status: 404 });
    const etag = `"${body.length}"`;
    if (ifNoneMatch === etag) return new Response(null, { status: 304 });
    return new Response(body, { headers: { etag } });
  }) as typeof fetch;
  return { fetcher, asked };
}

async function watch(bodies: Parameters<typeof listServer>[0], options: Partial<WatchOptions> = {}): Promise<WatchLine> {
  const { fetcher } = listServer(bodies);
  return watchBlockLists({ settings: { host: HOST, lists: Object.keys(bodies) }, requests: REQUESTS, fetch: fetcher, log: () => {}, ...options });
}

describe("watchBlockLists: whether the lists block what the site's pages send and load", () => {
  it("says clear when no rule matches the site: generic rules for other paths, other sites' rules, third-party rules", async () => {
    const line = await watch({ [PRIVACY]: TODAY });
    expect(line).toMatchObject({ event: "tunnel_watch", v: 1, status: "clear", requests_checked: 2, blocks: [], rules_unchecked: 0, reason: null });
    expect(line.lists).toEqual([{ url: PRIVACY, outcome: "read", version: "202611281200", rules_kept: 1, detail: null }]);
  });

  it("says blocked, naming the rule, the list, its version and the path, for a rule on this site's route", async () => {
    const line = await watch({ [PRIVACY]: `${TODAY}||${HOST}${ROUTE}$xhr\n` });
    expect(line.status).toBe("blocked");
    expect(line.blocks).toEqual([
      { what: "envelopes", path: ROUTE, rule: `||${HOST}${ROUTE}$xhr`, list: PRIVACY, version: "202611281200", browsers: ["Chromium", "Firefox"], remedy: "set TUNNEL_ROUTE" },
    ]);
    const [message, ...more] = watchMessages(line);
    expect(more).toEqual([]);
    expect(message!.fingerprint).toEqual(["tunnel-watch", PRIVACY, `||${HOST}${ROUTE}$xhr`]);
    expect(message!.message).toContain(`${PRIVACY} (version 202611281200) has the rule ||${HOST}${ROUTE}$xhr, which blocks envelopes (${ROUTE}) on ${HOST}`);
    expect(message!.message).toContain("To do: set TUNNEL_ROUTE.");
    // The package README's sample line has a real line's fields, and its block a real block's.
    const sample = JSON.parse(/```json\n(.*)\n```/.exec(readFileSync(new URL("../README.md", import.meta.url), "utf8"))![1]!) as WatchLine;
    expect(Object.keys(sample).sort()).toEqual(Object.keys(line).sort());
    expect(Object.keys(sample.blocks[0]!).sort()).toEqual(Object.keys(line.blocks[0]!).sort());
    expect(Object.keys(sample.lists[0]!).sort()).toEqual(Object.keys(line.lists[0]!).sort());
  });

  it("reads a list that opens with blank lines", async () => {
    expect(await watch({ [PRIVACY]: `\n\r\n${TODAY}` })).toMatchObject({ status: "clear", lists: [{ outcome: "read", rules_kept: 1 }] });
  });

  it("names a list that gives no version of its own by its ETag", async () => {
    const body = "! Title: Privacy\n! Last modified: %timestamp%\n/monitoring?o=$xmlhttprequest\n";
    const line = await watch({ [PRIVACY]: body });
    expect(line.lists[0]!.version).toBe(String(body.length));
  });

  it("catches the script that loads the SDK, and a rule one browser's section of the list holds", async () => {
    const line = await watch({ [PRIVACY]: `${TODAY}!#if env_firefox\n/sdk.client-$script,1p\n!#endif\n` });
    expect(line.blocks).toMatchObject([{ what: "script", rule: "/sdk.client-$script,1p", browsers: ["Firefox"], remedy: "rename the chunk" }]);
  });

  it("checks uBO's $method rules itself, which the engine drops: a POST to the route, a GET of a script", async () => {
    const rules = [`||${HOST}${ROUTE}$xhr,method=post`, `||${HOST}${ROUTE}$xhr,method=get`, "/sdk.client-$script,method=get|head", "/sdk.client-$script,method=~get"];
    const line = await watch({ [PRIVACY]: list("Privacy", ...rules) });
    expect(line.blocks.map((block) => [block.path, block.rule, block.list])).toEqual([
      [ROUTE, rules[0], PRIVACY],
      [REQUESTS[1]!.path, rules[2], PRIVACY],
    ]);
    expect(line.rules_unchecked).toBe(0);
    expect(await watch({ [PRIVACY]: list("Privacy", rules[1]!, rules[3]!) })).toMatchObject({ status: "clear" });
  });

  it("checks the rules against randomised script paths that uBO writes with strict1p and to=, which the engine drops", async () => {
    const shape = String.raw`/^https:\/\/[.\w]+\/build\/_shared\/sdk\.client-[A-Z0-9]{8}\.js$/$script,1p,strict1p,match-case,to=~gov|~edu`;
    const line = await watch({ [PRIVACY]: list("Privacy", shape) });
    expect(line).toMatchObject({ status: "blocked", rules_unchecked: 0, blocks: [{ what: "script", rule: shape, list: PRIVACY }] });
  });

  it("counts the rules for the site that the engine can read neither way, so that the line says what it could not check", async () => {
    const line = await watch({ [PRIVACY]: list("Privacy", `||${HOST}${ROUTE}$xhr,header=x-sentry:/tunnel/`, `||${HOST}${ROUTE}$xhr,ipaddress=192.0.2.1`, "/monitoring?o=$xmlhttprequest") });
    expect(line).toMatchObject({ status: "clear", rules_unchecked: 2 });
  });

  it("lets one list's exception lift another's block, as the browser does", async () => {
    const line = await watch({ [PRIVACY]: `${TODAY}/6b1xzn8op8$xhr\n`, [UNBREAK]: list("Unbreak", `@@||${HOST}${ROUTE}$xhr`) });
    expect(line.status).toBe("clear");
  });

  it("says one message per rule, and at most a bounded number of rules, however many a list matches with", async () => {
    const scripts = Array.from({ length: 30 }, (_, index): WatchedRequest => ({ what: "script", path: `/build/chunk-${index}.js`, type: "script", remedy: "rename it" }));
    const line = await watch({ [PRIVACY]: list("Hostile", ...scripts.map((script) => `${script.path}$script`)) }, { requests: scripts });
    expect(line).toMatchObject({ status: "blocked", blocks_found: 30 });
    expect(line.blocks).toHaveLength(MAX_BLOCKS_SAID);
    // Each the list's own rule, as the list writes it: never the engine's fusion of several.
    expect(line.blocks.map((block) => [block.rule, block.list])).toEqual(scripts.slice(0, MAX_BLOCKS_SAID).map((script) => [`${script.path}$script`, PRIVACY]));
    expect(watchMessages(line)).toHaveLength(MAX_BLOCKS_SAID);
  });

  it("asks again with the last read's ETag, and decides on what it kept when the list has not changed", async () => {
    const store = memoryListStore();
    const body = `${TODAY}||${HOST}${ROUTE}$xhr\n`;
    const server = listServer({ [PRIVACY]: body });
    const options = { settings: { host: HOST, lists: [PRIVACY] }, requests: REQUESTS, fetch: server.fetcher, store, log: () => {} };
    await watchBlockLists(options);
    const again = await watchBlockLists(options);
    expect(server.asked.map((ask) => ask.ifNoneMatch)).toEqual([null, `"${body.length}"`]);
    expect(again).toMatchObject({ status: "blocked", lists: [{ outcome: "unchanged", version: "202611281200" }] });
  });

  it.each([
    ["a server error", () => new Response("down", { status: 503 }), "status", "answered 503"],
    ["an HTML page", () => new Response("<!doctype html><title>Sign in</title>"), "not_a_list", "its first line is not a filter list's"],
    ["bytes that are not UTF-8", () => new Response(new Uint8Array([0x21, 0x20, 0xff, 0xfe, 0x0a])), "not_a_list", "it is not UTF-8 text"],
    ["a list with no filter", () => new Response("! Title: empty\n! Version: 1\n"), "not_a_list", "it holds no filter"],
    ["a declared body over the limit", () => new Response("! x\n", { headers: { "content-length": "9000000" } }), "too_large", "declares 9000000 bytes, over 8388608"],
    ["a streamed body over the limit", () => new Response(endless()), "too_large", "over 8388608 bytes"],
    ["a refused connection", () => Promise.reject(new TypeError("connection refused")), "unreachable", "connection refused"],
  ])("fails the run, never clear nor blocked, on %s", async (_, answer, outcome, detail) => {
    const line = await watch({ [PRIVACY]: `${TODAY}||${HOST}${ROUTE}$xhr\n`, [UNBREAK]: answer });
    expect(line).toMatchObject({ status: "failed", blocks: [], reason: `1 of 2 lists gave no verdict: ${UNBREAK} ${detail}` });
    expect(line.lists[1]).toMatchObject({ url: UNBREAK, outcome, detail });
    expect(watchMessages(line)).toEqual([]);
  });

  it("fails the run on a server that never finishes its body, within its time", async () => {
    const stalled = (init: RequestInit | undefined) =>
      new Response(
        new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode("! Title: slow\n"));
            init?.signal?.addEventListener("abort", () => controller.error(init.signal!.reason));
          },
        }),
      );
    const line = await watch({ [PRIVACY]: stalled }, { limits: { timeoutMs: 200 } });
    expect(line).toMatchObject({ status: "failed", lists: [{ outcome: "timeout", detail: "did not finish in time" }] });
  });

  it("fails the run when the lists keep more rules for the site than the engine is given to hold", async () => {
    const generic = Array.from({ length: 10 }, (_, index) => `/generic-${index}$xhr`);
    const line = await watch({ [PRIVACY]: list("Privacy", ...generic.slice(0, 4)), [UNBREAK]: list("Unbreak", ...generic) }, { limits: { maxRules: 6 } });
    expect(line).toMatchObject({ status: "failed", lists: [{ outcome: "read", rules_kept: 4 }, { outcome: "too_large", detail: "it keeps over 2 rules that can match the site" }] });
  });

  it("fails the run when the rules kept for the site are too long to hold, however few", async () => {
    const long = `/${"x".repeat(30_000)}$xhr`;
    const line = await watch({ [PRIVACY]: list("Long rules", ...Array.from({ length: 80 }, () => long)) });
    expect(line).toMatchObject({ status: "failed", lists: [{ outcome: "too_large", detail: "it keeps over 2097152 characters of rules that can match the site" }] });
  });

  it("fails the run when its time is spent before every list is read, whatever each list's own time", async () => {
    let clock = 0;
    const line = await watch({ [PRIVACY]: TODAY, [UNBREAK]: TODAY }, { now: () => (clock += 1_000), limits: { runMs: 1_500 } });
    expect(line).toMatchObject({ status: "failed", lists: [{ outcome: "read" }, { outcome: "timeout", detail: "the run's time was spent before it" }] });
  });

  it("leaves out, and counts as unchecked, rules whose regular expressions could backtrack for ever on the URLs asked about", async () => {
    const nested = `/${"(".repeat(5_000)}a${")".repeat(5_000)}/$xhr`;
    const hostile = ["/^(.+)+!$/$xhr", "/a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*!$xhr", String.raw`/^\/(a|aa)+$/$script`, nested];
    const line = await watch({ [PRIVACY]: list("Hostile", ...hostile, `||${HOST}${ROUTE}$xhr`) }, { limits: { runMs: 5_000 } });
    expect(line).toMatchObject({ status: "blocked", blocks_found: 1, rules_unchecked: hostile.length, reason: null });
    expect(line.duration_ms).toBeLessThan(5_000);
  });

  it("fails the run, saying why, when its time is spent while the engine is asked", async () => {
    let clock = 0;
    const line = await watch({ [PRIVACY]: TODAY }, { now: () => (clock += 100), limits: { runMs: 450 } });
    expect(line).toMatchObject({ status: "failed", lists: [{ outcome: "read" }], reason: "the run's time (0.45 s) was spent before the engine had been asked about every request" });
  });

  it("fails a list of one endless line at its bound, reading it in time that grows with its length alone", async () => {
    const oneLine = new TextEncoder().encode(`! Title: one line\n/${"x".repeat(1024 * 1024)}`);
    const line = await watch({ [PRIVACY]: () => new Response(oneLine) });
    expect(line).toMatchObject({ status: "failed", lists: [{ outcome: "not_a_list", detail: "a line is over 32768 characters" }] });
  });

  it("follows a redirect to another https:// address, and refuses one to plain http:// off loopback", async () => {
    const moved = (location: string) => () => new Response(null, { status: 302, headers: { location } });
    const settings = { host: HOST, lists: [PRIVACY] };
    const followed = await watch({ [PRIVACY]: moved("https://mirror.test/privacy.txt"), "https://mirror.test/privacy.txt": TODAY }, { settings });
    expect(followed.lists).toMatchObject([{ url: PRIVACY, outcome: "read" }]);
    const line = await watch({ [PRIVACY]: moved("http://lists.test/privacy.txt"), "http://lists.test/privacy.txt": TODAY }, { settings });
    expect(line).toMatchObject({
      status: "failed",
      lists: [{ url: PRIVACY, outcome: "status", detail: "redirects to an address the watch does not fetch (only https://, or http:// on loopback)" }],
    });
  });

  it("writes no token of a private list's address in its line, its messages or their fingerprints", async () => {
    const token = "a1b2c3d4e5f6a7b8c9d0";
    const secret = `https://lists.test/${token}/privacy.txt?key=s3cr3t-key`;
    const blocked = await watch({ [secret]: `${TODAY}||${HOST}${ROUTE}$xhr\n` });
    expect(blocked.lists[0]!.url).toBe("https://lists.test/…/privacy.txt?…");
    const failed = await watch({ [secret]: () => Promise.reject(new TypeError(`fetch to ${secret} failed`)) });
    const said = JSON.stringify([blocked, watchMessages(blocked), failed]);
    expect(said).toContain("https://lists.test/…/privacy.txt?…");
    expect(said).not.toMatch(new RegExp(`${token}|s3cr3t`));
  });

  it("fails the run when the requests to check cannot be listed", async () => {
    const line = await watch({ [PRIVACY]: TODAY }, { requests: () => Promise.reject(new Error("ASSETS is not bound")) });
    expect(line).toMatchObject({ status: "failed", reason: "the requests to check could not be listed: ASSETS is not bound", lists: [] });
  });
});

/** A list that goes on for ever, in lines of some 4 KiB of rules for another site, which are not kept. */
function endless(): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const chunk = encoder.encode(`||elsewhere.example/${"x".repeat(4_096)}$xhr\n`);
  return new ReadableStream(
    {
      start: (controller) => controller.enqueue(encoder.encode("! Title: endless\n")),
      pull: (controller) => controller.enqueue(chunk),
    },
    { highWaterMark: 0 },
  );
}

describe("watchedRequestsOf: what the tunnel's pages send, from its start line", () => {
  const asked = (variables: Parameters<typeof tunnelUnderTest>[0]) =>
    watchedRequestsOf(tunnelUnderTest(variables).tunnel.describe()).map(({ what, path, type }) => [what, path, type]);

  it("asks about the route pages post to, its CSP report path and Sentry's tunnel: true path; not the routes kept for old pages", () => {
    const [route, csp, sentry, ...more] = asked({ TUNNEL_RETIRED_ROUTES: "/k7q2x9" });
    expect([route, csp, sentry?.slice(0, 1), sentry?.[2], more]).toEqual([
      ["envelopes", expect.stringMatching(/^\/[a-z0-9]{10}$/), "xmlhttprequest"],
      ["CSP reports", `${route![1]}/csp`, "csp_report"],
      ["tunnel: true"],
      "xmlhttprequest",
      [],
    ]);
  });

  it("asks about /monitoring with its query when pages post there, which EasyPrivacy blocks", () => {
    expect(asked({ TUNNEL_ROUTE: "/monitoring", TUNNEL_SENTRY_PATHS: "off" })).toEqual([
      ["envelopes", "/monitoring?o=4501&p=4502&r=us", "xmlhttprequest"],
      ["CSP reports", "/monitoring/security-report", "csp_report"],
    ]);
  });
});
