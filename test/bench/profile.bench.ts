import { it } from "vitest";

import { freePort } from "../support/http";
import { APP_ROUTE, APP_DSN } from "../support/worker";
import { root, startWorkerd, wranglerCompatibility } from "../support/workerd";
import { CORES_USED, onTheWorkersCore } from "./cores";
import { userWorkerInspector } from "./devtools";
import { envelopeLoad, examplesShapeOptions, startDrainingIngest } from "./measure";
import { runLoad } from "./wrk";

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
}

const SAMPLING_MICROSECONDS = 100;

/**
 * `npm run bench:profile`: samples the tunnel's isolate under a load of 10 KB envelopes (or of
 * `BENCH_SIZE` bytes) and prints where its own CPU goes, by function (minified names: look them up
 * in build/index.js at line:column; `PROFILE_TOP` rows, 25 by default), in per cent of the samples
 * and in µs per request. The isolate's samples only: workerd's own work around it (sockets, HTTP)
 * is not in them. The inspector is attached, so `console.log` costs far more here than without it,
 * and its sampling shares the Worker's core (`cores.ts`): compare profiles taken the same way.
 */
it("profiles the tunnel's isolate", async () => {
  const ingest = await startDrainingIngest();
  const inspectorPort = await freePort();
  // `BENCH_PROFILE=examples` profiles the getsentry/examples shape instead, to compare function by function.
  const examples = process.env.BENCH_PROFILE === "examples";
  const worker = await onTheWorkersCore(
    startWorkerd(
      examples
        ? { ...examplesShapeOptions(ingest.origin), inspectorPort }
        : {
            modules: [{ type: "ESModule", path: `${root}build/index.js` }],
            ...wranglerCompatibility(),
            // No limiter bound, said on purpose: its simulation here is Miniflare's, not production's.
            bindings: { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin, TUNNEL_RATE_LIMITING: "off" },
            // As `wrangler.toml` binds it: without it, every envelope Sentry took would be logged too.
            analyticsEngineDatasets: { TUNNEL_ANALYTICS: { dataset: "tunnel_envelopes" } },
            inspectorPort,
          },
      { output: "drop" },
    ),
  );
  try {
    const { origin } = worker;
    const load = { url: `${origin}${examples ? "/" : APP_ROUTE}`, ...envelopeLoad(Number(process.env.BENCH_SIZE ?? 10 * 1024)) };
    await runLoad({ ...load, seconds: 1 });

    const client = await userWorkerInspector(inspectorPort);
    await client.send("Profiler.enable");
    await client.send("Profiler.setSamplingInterval", { interval: SAMPLING_MICROSECONDS });
    await client.send("Profiler.start");
    const { requests } = await runLoad({ ...load, seconds: 4 });
    const { profile } = await client.send<{ profile: { nodes: ProfileNode[] } }>("Profiler.stop");
    client.close();

    const samples = new Map<string, number>();
    let total = 0;
    for (const { callFrame, hitCount = 0 } of profile.nodes) {
      const where = callFrame.url ? ` ${callFrame.url.split("/").pop()}:${callFrame.lineNumber + 1}:${callFrame.columnNumber + 1}` : "";
      const name = `${callFrame.functionName || "(anonymous)"}${where}`;
      samples.set(name, (samples.get(name) ?? 0) + hitCount);
      total += hitCount;
    }
    console.log(CORES_USED);
    console.table(
      [...samples]
        .sort((a, b) => b[1] - a[1])
        .slice(0, Number(process.env.PROFILE_TOP ?? 25))
        .map(([name, count]) => ({
          "Self time": `${((100 * count) / total).toFixed(1)} %`,
          // Samples are taken at the interval, so a function's samples over the requests served are its time per request.
          "µs per request": ((count * SAMPLING_MICROSECONDS) / requests).toFixed(1),
          Function: name,
        })),
    );
  } finally {
    await worker.dispose();
    await ingest.stop();
  }
});
