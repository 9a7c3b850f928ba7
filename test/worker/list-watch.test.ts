import { readdirSync } from "node:fs";

import { eventually } from "@edge-monitoring/tunnel/testing";
import type { WatchLine } from "@edge-monitoring/list-watch";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { LIST_WATCH_CRON, LIST_WATCH_MONITOR_SLUG } from "../../worker/operator-monitors";
import { listTexts, PINNED_LISTS } from "@edge-monitoring/list-watch/lists";
import { startListServer, type ListServer } from "@edge-monitoring/list-watch/list-server";
import { buildEnvelope, payloads, received } from "../support/envelopes";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { root } from "../support/workerd";
import { APP_ROUTE } from "../support/worker";

/** The site's public host, as an operator sets it. */
const HOST = "app.example.com";
/** uBO's Privacy list, where the site-specific rules against first-party error reporting live. */
const PRIVACY = "privacy.min.txt";

interface CheckIn {
  monitor_slug: string;
  status: string;
  monitor_config?: { schedule: { value: string } };
}
interface SentryEvent {
  message?: string;
  level?: string;
  fingerprint?: string[];
}

/** Every script `npm run build` wrote for the browser. */
const buildScripts = () => readdirSync(`${root}public/build`, { recursive: true, encoding: "utf8" }).filter((path) => path.endsWith(".js"));

/** uBlock Origin's default lists, pinned, so that an operating-system update changes no verdict here. */
const todays = listTexts(PINNED_LISTS);

describe("the list watch: a Cron Trigger that asks the ad-block lists about the site's monitoring (issue 49)", () => {
  let lists: ListServer;
  beforeAll(async () => {
    lists = await startListServer(todays);
  });
  afterAll(() => lists?.stop());
  const { ingest, worker } = useIngestAndWorker(() => ({ TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: HOST, TUNNEL_WATCH_LISTS: lists.urls.join(",") }));

  const checkIns = () => payloads<CheckIn>(received(ingest.deliveries), "check_in").filter((checkIn) => checkIn.monitor_slug === LIST_WATCH_MONITOR_SLUG);
  const messages = () => payloads<SentryEvent>(received(ingest.deliveries), "event").filter((event) => event.fingerprint?.[0] === "tunnel-watch");
  const failures = () => payloads<SentryEvent>(received(ingest.deliveries), "event").filter((event) => event.fingerprint?.[0] === "tunnel-watch-failed");
  const lastLine = () => worker.logLines<WatchLine>("tunnel_watch").at(-1);
  /** One run of the watch's trigger; its line is written before `scheduled()` returns, its reports soon after. */
  const run = async () => {
    const before = worker.logLines("tunnel_watch").length;
    await worker.scheduled(LIST_WATCH_CRON);
    await eventually(() => worker.logLines("tunnel_watch").length > before, 10_000, { saw: () => worker.logs.slice(-5) });
    return lastLine()!;
  };

  beforeEach(() => {
    for (const [name, text] of Object.entries(todays)) lists.set(name, text);
    ingest.deliveries.length = 0;
  });

  it("checks in ok with the pinned lists, having asked about the route and every script the pages load, the SDK's among them", async () => {
    const line = await run();
    expect(line).toMatchObject({ status: "clear", host: HOST, blocks: [], reason: null });
    expect(line.lists.map((list) => list.outcome)).toEqual(Object.keys(todays).map(() => "read"));
    // The route, its CSP report path and Sentry's `tunnel: true` path; then every script of the build.
    expect(line.requests_checked).toBe(3 + buildScripts().length);
    await eventually(() => checkIns().length === 1);
    expect(checkIns()[0]).toMatchObject({ status: "ok", monitor_config: { schedule: { value: LIST_WATCH_CRON } } });
    expect(messages()).toEqual([]);
  });

  it("checks in error, and says in one message the rule, its list and the path, when a list gains a rule for this site's route", async () => {
    const rule = `||${HOST}${APP_ROUTE}$xhr`;
    lists.set(PRIVACY, `${todays[PRIVACY]}\n${rule}\n`);
    const line = await run();
    expect(line).toMatchObject({ status: "blocked", blocks: [{ what: "envelopes", path: APP_ROUTE, rule }] });
    await eventually(() => checkIns().length === 1 && messages().length === 1);
    expect(checkIns()[0]!.status).toBe("error");
    const [message] = messages();
    expect(message!.level).toBe("error");
    expect(message!.fingerprint).toEqual(["tunnel-watch", lists.urls.find((url) => url.endsWith(PRIVACY)), rule]);
    expect(message!.message).toContain(`has the rule ${rule}, which blocks envelopes (${APP_ROUTE}) on ${HOST}`);
    expect(message!.message).toContain("TUNNEL_RETIRED_ROUTES");
  });

  it("catches a rule against the SDK's chunk, which the pages load as a script", async () => {
    lists.set(PRIVACY, `${todays[PRIVACY]}\n||${HOST}/build/_shared/sdk.client-$script\n`);
    const line = await run();
    expect(line.blocks).toMatchObject([{ what: "script", path: expect.stringMatching(/^\/build\/_shared\/sdk\.client-\w+\.js$/) }]);
  });

  it("still checks in ok when a list gains the same rule for another site", async () => {
    lists.set(PRIVACY, `${todays[PRIVACY]}\n||other.example.org${APP_ROUTE}$xhr\n`);
    expect(await run()).toMatchObject({ status: "clear" });
    await eventually(() => checkIns().length === 1);
    expect(checkIns()[0]!.status).toBe("ok");
  });

  it.each([
    ["fails", (response: import("node:http").ServerResponse) => void response.writeHead(503).end("down"), "answered 503"],
    ["serves garbage", (response: import("node:http").ServerResponse) => void response.writeHead(200).end("<!doctype html><h1>Sign in to the Wi-Fi</h1>"), "its first line is not a filter list's"],
  ])("checks in error, and says why in its line and in one message, when a list's server %s", async (_, answer, detail) => {
    lists.set(PRIVACY, answer);
    const line = await run();
    expect(line).toMatchObject({ status: "failed", blocks: [] });
    expect(line.reason).toContain(`${lists.urls.find((url) => url.endsWith(PRIVACY))} ${detail}`);
    await eventually(() => checkIns().length === 1 && failures().length === 1);
    expect(checkIns()[0]!.status).toBe("error");
    expect(failures()[0]!.message).toContain(line.reason);
    expect(messages()).toEqual([]);
  });

  it("follows a list's redirect on loopback, and fails the run on one to plain http:// elsewhere, in workerd's own fetch", async () => {
    const privacy = lists.urls.find((url) => url.endsWith(PRIVACY))!;
    lists.set("moved.txt", todays[PRIVACY]!);
    lists.set(PRIVACY, (response) => void response.writeHead(301, { location: "/moved.txt" }).end());
    expect(await run()).toMatchObject({ status: "clear" });
    lists.set(PRIVACY, (response) => void response.writeHead(302, { location: "http://lists.example.net/privacy.min.txt" }).end());
    const line = await run();
    expect(line).toMatchObject({ status: "failed" });
    expect(line.reason).toContain(`${privacy} redirects to an address the watch does not fetch (only https://, or http:// on loopback)`);
  });

  it("ends its run, and serves a visitor's envelope meanwhile, when a list holds rules that would backtrack for ever", async () => {
    const hostile = ["/^(.+)+!$/$xhr", "/a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*!$script"];
    const { rules_unchecked: uncheckedToday } = await run();
    lists.set(PRIVACY, `${todays[PRIVACY]}\n${hostile.join("\n")}\n`);
    const before = worker.logLines("tunnel_watch").length;
    const running = worker.scheduled(LIST_WATCH_CRON);
    const answer = await worker.post(buildEnvelope().body);
    expect(answer.status).toBe(200);
    await running;
    await eventually(() => worker.logLines("tunnel_watch").length > before, 10_000);
    const line = lastLine()!;
    expect(line).toMatchObject({ status: "clear", reason: null, rules_unchecked: uncheckedToday! + hostile.length });
  });

  it("asks for a list again with the last read's ETag, and the server's 304 keeps its verdict", async () => {
    lists.set(PRIVACY, `${todays[PRIVACY]}\n||${HOST}${APP_ROUTE}$xhr\n`);
    await run();
    const asked = lists.asked.length;
    const line = await run();
    expect(line).toMatchObject({ status: "blocked" });
    expect(line.lists.every((list) => list.outcome === "unchanged")).toBe(true);
    expect(lists.asked.slice(asked).every((request) => request.ifNoneMatch !== undefined)).toBe(true);
  });
});
