// `npm run bench:watch`: what one run of the list watch costs the Worker that runs it (decision 032).
// The built Worker in workerd asks uBlock Origin's seven default lists (Debian's copies, served on
// loopback) about its own route and scripts through its Cron Trigger. Read from the workerd process:
// CPU time per run, with every list changed (read and parsed in full) and unchanged (304s, kept
// lines from R2), against the spool heartbeat's run as the control; the process's peak memory over
// the runs; and the bundle's size, the engine's share of it. Nothing here is a test's verdict.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { Worker } from "node:worker_threads";
import { gzipSync } from "node:zlib";

import { build } from "esbuild";
import { it } from "vitest";

import { LIST_WATCH_CRON } from "../../app/monitoring/operator-monitors";
import { BUNDLED_LISTS } from "../../scripts/filter-lists";
import { startListServer } from "../../scripts/list-server";
import { FakeIngest } from "../support/fake-ingest";
import { peakRss } from "../support/process-memory";
import { APP_DSN, startWorker } from "../support/worker";
import { root } from "../support/workerd";
import { cpuMilliseconds, median, MiB, residentMegabytes, workerBundleGzipBytes } from "./measure";

const ROUNDS = 5;
const HEARTBEAT_CRON = "*/5 * * * *";

it("prices one run of the list watch in CPU, memory and bundle bytes", async () => {
  const todays = Object.fromEntries(BUNDLED_LISTS.map((file) => [basename(file), readFileSync(file, "utf8")]));
  const lists = await startListServer(todays);
  const ingest = await FakeIngest.start();
  const worker = await startWorker({
    SENTRY_DSN: APP_DSN,
    TUNNEL_UPSTREAM_ORIGIN: ingest.origin,
    TUNNEL_WATCH: "on",
    TUNNEL_WATCH_HOST: "app.example.com",
    TUNNEL_WATCH_LISTS: lists.urls.join(","),
  });
  try {
    const rssBefore = residentMegabytes(worker.pid);
    const cpuOf = async (cron: string) => {
      const before = cpuMilliseconds(worker.pid);
      await worker.scheduled(cron);
      return cpuMilliseconds(worker.pid) - before;
    };
    const changed: number[] = [];
    const unchanged: number[] = [];
    const heartbeat: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      // A new comment in every list: a new ETag, so each is read and parsed in full.
      for (const [name, text] of Object.entries(todays)) lists.set(name, `${text}\n! round ${round}\n`);
      changed.push(await cpuOf(LIST_WATCH_CRON));
      unchanged.push(await cpuOf(LIST_WATCH_CRON));
      heartbeat.push(await cpuOf(HEARTBEAT_CRON));
    }
    const lines = worker.logLines<{ status: string; lists: { outcome: string; rules_kept: number }[] }>("tunnel_watch");
    if (lines.some((line) => line.status !== "clear")) throw new Error(`a run did not say clear: ${JSON.stringify(lines.find((line) => line.status !== "clear"))}`);
    const kept = lines[0]!.lists.reduce((sum, list) => sum + list.rules_kept, 0);
    const listBytes = Object.values(todays).reduce((sum, text) => sum + Buffer.byteLength(text), 0);

    const engine = await build({ entryPoints: [`${root}packages/tunnel/dist/watch/verdicts.js`], bundle: true, minify: true, write: false, format: "esm", platform: "neutral" });
    const engineGzip = gzipSync(engine.outputFiles[0]!.contents).length;
    const bundleGzip = workerBundleGzipBytes();

    console.log(`\nThe list watch, ${ROUNDS} rounds, medians of workerd's CPU time per run (user + system, 10 ms ticks):`);
    console.table({
      "every list changed (7 lists read, cut and parsed)": { "CPU ms": median(changed), "× the heartbeat": +(median(changed) / Math.max(median(heartbeat), 10)).toFixed(1) },
      "no list changed (304s, kept lines from R2)": { "CPU ms": median(unchanged), "× the heartbeat": +(median(unchanged) / Math.max(median(heartbeat), 10)).toFixed(1) },
      "control: the spool's heartbeat": { "CPU ms": median(heartbeat), "× the heartbeat": 1 },
    });
    console.log(`Lists: ${(listBytes / MiB).toFixed(2)} MiB in all; ${kept} rules kept for the host.`);
    console.log(`workerd's resident memory: ${rssBefore.toFixed(1)} MB before the first run, ${residentMegabytes(worker.pid).toFixed(1)} MB after; peak ${(peakRss(worker.pid) / MiB).toFixed(1)} MB.`);
    const heap = await smallestHeapFor({ files: BUNDLED_LISTS, host: "app.example.com", requests: [{ what: "envelopes", path: "/6b1xzn8op8", type: "xmlhttprequest", remedy: "" }] });
    console.log(`A run fits in a V8 old generation of ${heap} MB (Node's worker thread, the same code; the smallest of ${HEAP_LIMITS_MB.join(", ")} MB that completed).`);
    console.log(`Bundle: the Worker ${(bundleGzip / 1024).toFixed(1)} KB gzip, of which the engine and the watch's matching about ${(engineGzip / 1024).toFixed(1)} KB (${((100 * engineGzip) / bundleGzip).toFixed(0)} %).`);
  } finally {
    await worker.dispose();
    await ingest.stop();
    await lists.stop();
  }
});

/** Old-generation limits tried, smallest first. */
const HEAP_LIMITS_MB = [4, 8, 12, 16, 24, 32, 48, 64, 128];

/** The smallest of {@link HEAP_LIMITS_MB} under which one run in a worker thread completes. */
async function smallestHeapFor(workerData: unknown): Promise<number | string> {
  for (const limit of HEAP_LIMITS_MB) {
    const worker = new Worker(`${root}test/bench/fixtures/watch-heap.ts`, { workerData, resourceLimits: { maxOldGenerationSizeMb: limit, maxYoungGenerationSizeMb: 4 } });
    const status = await new Promise<string>((resolve) => {
      worker.once("message", resolve);
      worker.once("error", (error) => resolve(`failed: ${error.message}`));
    });
    await worker.terminate();
    if (status === "clear") return limit;
  }
  return `over ${HEAP_LIMITS_MB.at(-1)}`;
}
