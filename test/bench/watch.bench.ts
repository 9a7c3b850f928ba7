// `npm run bench:watch`: what one run of the list watch costs the Worker that runs it (decision 032).
// The built Worker in workerd asks uBlock Origin's seven default lists (Debian's copies, served on
// loopback) about its own route and scripts through its Cron Trigger. Read from workerd: CPU time
// per run, with every list changed (read and parsed in full) and unchanged (304s, kept lines from
// R2), against the spool heartbeat's run as the control; the isolate's V8 heap through the
// inspector; and the bundle's size, the engine's share of it. Nothing here is a test's verdict.
import { gzipSync } from "node:zlib";

import { build } from "esbuild";
import { it } from "vitest";

import { LIST_WATCH_CRON } from "../../worker/operator-monitors";
import { listTexts } from "@edge-monitoring/list-watch/lists";
import { startListServer } from "@edge-monitoring/list-watch/list-server";
import { FakeIngest } from "../support/fake-ingest";
import { freePort } from "../support/http";
import { APP_DSN, startWorker } from "../support/worker";
import { root } from "../support/workerd";
import { userWorkerInspector } from "./devtools";
import { cpuMilliseconds, median, MiB, workerBundleGzipBytes } from "./measure";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const HEARTBEAT_CRON = "*/5 * * * *";

interface HeapUsage {
  usedSize: number;
  totalSize: number;
}

it("prices one run of the list watch in CPU, memory and bundle bytes", async () => {
  const todays = listTexts();
  const lists = await startListServer(todays);
  const ingest = await FakeIngest.start();
  const variables = { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin, TUNNEL_WATCH: "on", TUNNEL_WATCH_HOST: "app.example.com", TUNNEL_WATCH_LISTS: lists.urls.join(",") };
  /** A new comment in every list: a new ETag, so that each is read and parsed in full. */
  const changeLists = (round: number) => {
    for (const [name, text] of Object.entries(todays)) lists.set(name, `${text}\n! round ${round}\n`);
  };
  try {
    // CPU first, on a Worker without the inspector, which slows what it watches.
    const worker = await startWorker(variables);
    const cpu = { changed: [] as number[], unchanged: [] as number[], heartbeat: [] as number[] };
    try {
      const cpuOf = async (cron: string) => {
        const started = cpuMilliseconds(worker.pid);
        await worker.scheduled(cron);
        return cpuMilliseconds(worker.pid) - started;
      };
      for (let round = 0; round < ROUNDS; round += 1) {
        changeLists(round);
        cpu.changed.push(await cpuOf(LIST_WATCH_CRON));
        cpu.unchanged.push(await cpuOf(LIST_WATCH_CRON));
        cpu.heartbeat.push(await cpuOf(HEARTBEAT_CRON));
      }
      const lines = worker.logLines<{ status: string; lists: { rules_kept: number }[] }>("tunnel_watch");
      if (lines.some((line) => line.status !== "clear")) throw new Error(`a run did not say clear: ${JSON.stringify(lines.find((line) => line.status !== "clear"))}`);
      const kept = lines[0]!.lists.reduce((sum, list) => sum + list.rules_kept, 0);
      const listBytes = Object.values(todays).reduce((sum, text) => sum + Buffer.byteLength(text), 0);
      console.log(`\nThe list watch, ${ROUNDS} rounds, medians of workerd's CPU time per run (user + system, 10 ms ticks):`);
      const toHeartbeat = (values: number[]) => +(median(values) / Math.max(median(cpu.heartbeat), 10)).toFixed(1);
      console.table({
        "every list changed (7 lists read, cut and parsed)": { "CPU ms": median(cpu.changed), "× the heartbeat": toHeartbeat(cpu.changed) },
        "no list changed (304s, kept lines from R2)": { "CPU ms": median(cpu.unchanged), "× the heartbeat": toHeartbeat(cpu.unchanged) },
        "control: the spool's heartbeat": { "CPU ms": median(cpu.heartbeat), "× the heartbeat": 1 },
      });
      console.log(`Lists: ${mb(listBytes)} MiB in all; ${kept} rules kept for the host.`);
    } finally {
      await worker.dispose();
    }
    console.log(await heapOverRuns(variables, changeLists));
    const engine = await build({ entryPoints: [`${root}packages/tunnel/dist/watch/verdicts.js`], bundle: true, minify: true, write: false, format: "esm", platform: "neutral" });
    const engineGzip = gzipSync(engine.outputFiles[0]!.contents).length;
    const bundleGzip = workerBundleGzipBytes();
    console.log(`Bundle: the Worker ${(bundleGzip / 1024).toFixed(1)} KB gzip, of which the engine and the watch's matching about ${(engineGzip / 1024).toFixed(1)} KB (${((100 * engineGzip) / bundleGzip).toFixed(0)} %).`);
  } finally {
    await ingest.stop();
    await lists.stop();
  }
});

const mb = (bytes: number) => (bytes / MiB).toFixed(1);

/** The isolate's V8 heap, through the inspector, around runs with every list changed. */
async function heapOverRuns(variables: Record<string, string>, changeLists: (round: number) => void): Promise<string> {
  const inspectorPort = await freePort();
  const worker = await startWorker(variables, { inspectorPort });
  const inspector = await userWorkerInspector(inspectorPort);
  try {
    const heap = () => inspector.send<HeapUsage>("Runtime.getHeapUsage");
    // workerd's inspector does not answer `HeapProfiler.collectGarbage`; a heap snapshot collects first.
    const liveHeap = async () => {
      await inspector.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
      return (await heap()).usedSize;
    };
    const before = { live: await liveHeap(), total: (await heap()).totalSize };
    const afterRun: HeapUsage[] = [];
    const live: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      changeLists(round);
      await worker.scheduled(LIST_WATCH_CRON);
      afterRun.push(await heap());
      live.push(await liveHeap());
    }
    return (
      `The isolate's V8 heap (inspector): ${mb(before.live)} MB live before the first run; ` +
      `at most ${mb(Math.max(...afterRun.map((usage) => usage.usedSize)))} MB used and ${mb(Math.max(...afterRun.map((usage) => usage.totalSize)))} MB reserved ` +
      `(from ${mb(before.total)}) right after a run; live once each run's garbage is collected: ${live.map(mb).join(", ")} MB.`
    );
  } finally {
    inspector.close();
    await worker.dispose();
  }
}
