import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { payloads, received } from "../support/envelopes";
import { FakeIngest, type IngestBehaviour } from "../support/fake-ingest";
import { root } from "../support/workerd";
import { APP_DSN, APP_ROUTE, startWorker, type RunningWorker } from "../support/worker";

/** The scheduled workflow, as GitHub runs it. */
const WORKFLOW = readFileSync(`${root}.github/workflows/blockers.yml`, "utf8");
/** The step's command, as the workflow gives it: what this test runs, with the step's variables its own. */
const COMMAND = /^\s+run: (npx sentry-cli monitors run .+)$/m.exec(WORKFLOW)![1]!;
/** uBlock Origin's default lists, pinned (cut to what can match these hosts), so that no update of the real ones changes a verdict here. */
const PINNED = Object.fromEntries(readdirSync(`${root}test/worker/fixtures/lists`).map((name) => [name, readFileSync(`${root}test/worker/fixtures/lists/${name}`, "utf8")]));

interface CheckIn {
  monitor_slug: string;
  status: string;
  monitor_config?: { schedule: { value: string } };
}

/**
 * The workflow that watches the ad-block lists from outside the Worker (decision 044): its own
 * command against the built app, with the lists and Sentry on loopback. Blockers see URLs and
 * resource types, never bodies, so a rule added to one list is what a list server can make of a site.
 */
describe("the ad-block lists workflow: npm run check:blockers under sentry-cli's cron check-ins", { timeout: 120_000 }, () => {
  let worker: RunningWorker;
  let lists: FakeIngest;
  let sentry: FakeIngest;
  let served: Record<string, string>;
  /** Each list at `/<name>`, as a list's own server answers. */
  const serveLists: IngestBehaviour = (request, response) => {
    const text = served[new URL(request.url ?? "/", lists.origin).pathname.slice(1)];
    response.writeHead(text === undefined ? 404 : 200, { "content-type": "text/plain" }).end(text ?? "no such list");
  };
  beforeAll(async () => {
    [worker, lists, sentry] = await Promise.all([startWorker({ SENTRY_DSN: APP_DSN }, { spool: false }), FakeIngest.start(), FakeIngest.start()]);
    lists.respondWith(serveLists);
  });
  afterAll(async () => {
    await worker?.dispose();
    await lists?.stop();
    await sentry?.stop();
  });

  /** The step's command, run by a shell as GitHub's runner does, with the lists `served` holds. */
  const runStep = (): Promise<{ code: number | null; output: string; checkIns: CheckIn[] }> => {
    sentry.reset();
    const env = {
      ...process.env,
      SITE_URL: worker.origin,
      SENTRY_DSN: `http://0123456789abcdef0123456789abcdef@${new URL(sentry.origin).host}/42`,
      FILTER_LISTS: Object.keys(served).map((name) => `${lists.origin}/${name}`).join(" "),
    };
    const child = spawn("bash", ["-c", COMMAND], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    return new Promise((resolve) =>
      child.once("close", (code) => resolve({ code, output, checkIns: payloads<CheckIn>(received(sentry.deliveries), "check_in").filter((checkIn) => checkIn.monitor_slug === "tunnel-blocklists") })),
    );
  };

  it("checks in ok, having asked about the route, its CSP path, Sentry's own path and every script any page can load", async () => {
    served = PINNED;
    const { code, output, checkIns } = await runStep();
    expect({ code, output }).toMatchObject({ code: 0, output: expect.stringMatching(/All \d+ pass\./) });
    expect(output).toMatch(new RegExp(`passes +envelopes +${APP_ROUTE}\\n`));
    expect(output).toMatch(/passes +tunnel: true +\/\w+\n/);
    expect(output).toMatch(new RegExp(`passes +CSP reports +${APP_ROUTE}/csp\\n`));
    // Every script of the build, the pages' that the home page does not load among them.
    const built = readdirSync(`${root}public/build`, { recursive: true, encoding: "utf8" }).filter((path) => path.endsWith(".js"));
    expect(built.filter((path) => !output.includes(`/build/${path}`))).toEqual([]);
    expect(checkIns.map((checkIn) => checkIn.status)).toEqual(["in_progress", "ok"]);
    expect(checkIns[0]!.monitor_config?.schedule.value).toBe("17 */6 * * *");
  });

  it("exits 1 naming the rule and its list, and checks in error, when a list gains a rule against the route", async () => {
    served = { ...PINNED, "privacy.min.txt": `${PINNED["privacy.min.txt"]}\n${APP_ROUTE}$xhr\n` };
    const { code, output, checkIns } = await runStep();
    expect(code).toBe(1);
    expect(output).toContain(`BLOCKED  envelopes    ${APP_ROUTE}\n             uBlock Origin: ${APP_ROUTE}$xhr (privacy.min.txt)`);
    expect(checkIns.map((checkIn) => checkIn.status)).toEqual(["in_progress", "error"]);
  });

  it("checks in error, and checks nothing, when a list cannot be read", async () => {
    served = PINNED;
    lists.respondWith((_request, response) => response.writeHead(503).end("busy"));
    try {
      const { code, output, checkIns } = await runStep();
      expect(code).toBe(2);
      expect(output).toContain("could not be read (status 503), so nothing was checked.");
      expect(checkIns.map((checkIn) => checkIn.status)).toEqual(["in_progress", "error"]);
    } finally {
      lists.respondWith(serveLists);
    }
  });
});
