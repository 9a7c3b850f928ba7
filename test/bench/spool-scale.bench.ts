// `npm run bench:spool`: the spool through a one-hour Sentry outage at the traffic of a large site,
// on a virtual clock. The tunnel's own code (`createTunnel`: the live path's spool decisions,
// the consumer, the dead-letter handler) runs unchanged against a model of a Cloudflare Queue that
// enforces the published limits, R2, and Sentry (`test/support/queue-model.ts`), as one isolate or
// as many, each with its own breakers and memory, in several locations, sharing the queue and R2.
// What it prints is a simulation's, against published limits and prices; nothing here is a test's verdict.
import { it } from "vitest";

import { createTunnel, type LogLine } from "@edge-monitoring/tunnel";
import { spool } from "@edge-monitoring/tunnel/spool";
import { EVERY_CLIENT } from "@edge-monitoring/tunnel/testing";
import { ModelBucket, ModelLimiter, ModelQueue, ModelSentry, QUEUE_LIMITS, type SentryModel } from "../support/queue-model";
import { installWorkerdStreams } from "../support/stream-model";
import { LINE_ATTRIBUTES_BYTES_ESTIMATE, LOGS_USD_PER_GB, PRICES } from "./price";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const START = Date.UTC(2026, 10, 27);
/** Normal traffic first, so that each project has its usual rate; then an hour of outage. */
const OUTAGE = { from: START + 5 * MINUTE, to: START + 65 * MINUTE };
/** The simulation stops when the spool is empty after the outage, or this long after it ends. */
const AFTER_RECOVERY_AT_MOST = 4 * 60 * MINUTE;

/** The projects a large site reports to, and each one's share of its envelopes. */
const PROJECTS = [
  { dsn: "https://0123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/4502", share: 0.4 },
  { dsn: "https://1123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/4503", share: 0.3 },
  { dsn: "https://2123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/4504", share: 0.2 },
  { dsn: "https://3123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/4505", share: 0.1 },
];

/**
 * The envelopes' sizes, by share: errors and small transactions, larger transactions with spans
 * (JSON, which packs), and replay segments (compressed by the SDK already, which does not). Mean
 * 11.35 KB; all fit a message (a body over 64 KB would be streamed).
 */
const SIZES: readonly Size[] = [
  { bytes: 2_000, share: 0.5, packs: true },
  { bytes: 12_000, share: 0.3, packs: true },
  { bytes: 25_000, share: 0.15, packs: true },
  { bytes: 60_000, share: 0.05, packs: false },
];

/**
 * The same, with a tenth of the envelopes over 64 KiB, as browsers send them: replay segments of
 * some 100 KB and attachments of 400 KB, neither of which packs. These stream to Sentry, and are
 * what an outage's first moments lost before the spool kept them in hand.
 */
const SIZES_WITH_LARGE: readonly Size[] = [...SIZES.map((size) => ({ ...size, share: size.share * 0.9 })), { bytes: 100_000, share: 0.08, packs: false }, { bytes: 400_000, share: 0.02, packs: false }];

interface Size {
  bytes: number;
  share: number;
  packs: boolean;
}

/** What the tunnel reads whole; a larger body streams. */
const STREAMED_OVER_BYTES = 64 * 1024;

const WORDS = ["render", "fetch", "loader", "action", "useEffect", "dispatch", "resolve", "undefined", "TypeError", "Cannot", "read", "properties", "of", "null", "node_modules", "react-dom", "production", "min", "chunk", "scheduler"];

/** Published prices per million past the included amounts, and Workers Logs by size from 2026-12-01 (`price.ts`). */
const USD_PER_MILLION = Object.fromEntries(Object.entries(PRICES).map(([name, { usdPerMillion }]) => [name, usdPerMillion])) as Record<keyof typeof PRICES, number>;

/** What the consumer's wall time is in production: a request to Sentry, and a hung one, which costs the whole deadline. */
const SENTRY_ANSWER_MS = 100;
/** An invocation's simultaneous outgoing connections (Workers limits): its other requests wait for one. */
const CONNECTIONS_PER_INVOCATION = 6;
const PRODUCTION_DEADLINE_MS = 30_000;
/** The consumer when it asks Sentry nothing: reading and settling the batch. */
const BATCH_WITHOUT_SENTRY_MS = 5;

interface Scenario {
  name: string;
  perSecond: number;
  kind: SentryModel["outage"]["kind"];
  /** Real envelopes each simulated one stands for. */
  weight: number;
  /** The consumer's `max_batch_size` in `wrangler.toml`: 10 in this app's, 100 (the most) for a large site. */
  batchSize: number;
  /**
   * `TUNNEL_SPOOL_TOTAL_BUDGET`'s limit, in 256 KiB units a minute for one location:
   * `wrangler.toml`'s 2,000 (500 MiB). It counts the bytes kept, packed.
   */
  totalBudgetUnits: number;
  /** Isolates, each a tunnel with its own breakers and memory, spread evenly over `locations`. */
  isolates: number;
  /** Cloudflare locations, each with its own total byte budget; one takes all the traffic, the worst case. */
  locations: number;
  sizes: readonly Size[];
  /**
   * The tunnel's deadline in real milliseconds: a hung request is given up this soon here, and
   * counted as the production deadline. Long enough for a large body to move through Node's streams.
   */
  timeoutMs: number;
}

interface Outcome {
  lost: number;
  refused: number;
  /** Envelopes over 64 KiB answered an error: the SDK does not send them again. */
  largeLost: number;
  /** Requests Sentry received during the outage, a minute: the live breakers' probes and the consumer's. */
  probesPerMinute: number;
  peakWrites: number;
  peakBacklogGB: number;
  costUsd: number;
  /** The same under the Workers Logs meter of 2026-12-01. */
  costUsdFromDecember: number;
  drainedMinutes: number | undefined;
  peakDrain: number;
  table: Record<string, string | number>;
}

function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function pick<T extends { share: number }>(choices: readonly T[], random: number): T {
  let sum = 0;
  for (const choice of choices) {
    sum += choice.share;
    if (random < sum) return choice;
  }
  return choices.at(-1)!;
}

const encoder = new TextEncoder();

/** What a compressed segment looks like to gzip: noise, made once (`getRandomValues` gives 64 KiB a call). */
const RANDOM_BYTES = new Uint8Array(512 * 1024);
for (let at = 0; at < RANDOM_BYTES.byteLength; at += 65_536) crypto.getRandomValues(RANDOM_BYTES.subarray(at, at + 65_536));

/**
 * An envelope as a browser SDK writes it, of about `bytes`: a header line and one item, an event's
 * JSON (stack frames with hashed file names, numbers and code, which gzip packs some 3 to 5 times)
 * or a replay segment's bytes, which it does not pack at all.
 */
function envelope(dsn: string, id: string, { bytes, packs }: Size, sentAt: number, random: () => number): Uint8Array<ArrayBuffer> {
  const header = `${JSON.stringify({ dsn, event_id: id, sent_at: new Date(sentAt).toISOString() })}\n`;
  if (!packs) {
    const head = encoder.encode(`${header}{"type":"replay_recording","length":${bytes}}\n`);
    const body = new Uint8Array(head.byteLength + bytes + 1);
    body.set(head);
    body.set(RANDOM_BYTES.subarray(0, bytes), head.byteLength);
    body[body.byteLength - 1] = 0x0a;
    return body;
  }
  const frames: object[] = [];
  let size = header.length + 100;
  while (size < bytes) {
    const frame = {
      filename: `/build/_shared/chunk-${Math.floor(random() * 2 ** 32).toString(16)}.js`,
      function: WORDS[Math.floor(random() * WORDS.length)],
      lineno: Math.floor(random() * 5_000),
      colno: Math.floor(random() * 200),
      context_line: Array.from({ length: 8 }, () => WORDS[Math.floor(random() * WORDS.length)]).join(" "),
    };
    frames.push(frame);
    size += JSON.stringify(frame).length + 1;
  }
  const event = JSON.stringify({ event_id: id, level: "error", exception: { values: [{ type: "TypeError", stacktrace: { frames } }] } });
  return encoder.encode(`${header}{"type":"event"}\n${event}\n`);
}

/**
 * A body as workerd hands it over, in chunks of 16 KiB: a large one is not whole once its header
 * line is read, and streams to Sentry. (Node's own `Request` would give a byte array whole.)
 */
function arriving(body: Uint8Array<ArrayBuffer>): BodyInit {
  if (body.byteLength <= STREAMED_OVER_BYTES) return body;
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(body.subarray(at, at + 16_384));
      at += 16_384;
      if (at >= body.byteLength) controller.close();
    },
  });
}

async function simulate(scenario: Scenario): Promise<Outcome> {
  let now = START;
  const clock = { now: () => now };
  const random = seeded(7);
  const queue = new ModelQueue(clock, scenario.weight, QUEUE_LIMITS.maxRetries);
  const deadQueue = new ModelQueue(clock, scenario.weight, QUEUE_LIMITS.maxRetries);
  const bucket = new ModelBucket(scenario.weight);
  const usualPerMinute = new Map(PROJECTS.map(({ dsn, share }) => [/\/(\d+)$/.exec(dsn)![1]!, scenario.perSecond * share * 60]));
  const sentry = new ModelSentry({ outage: { ...OUTAGE, kind: scenario.kind }, usualPerMinute, spikeFactor: 5 }, clock, scenario.weight);
  const logged = { lines: 0, spoolLines: 0, bytes: 0, batchLineBytes: 0, windowLines: 0, windowBytes: 0 };
  let spoolDataPoints = 0;
  const totalBudgets = Array.from({ length: scenario.locations }, () => new ModelLimiter(clock, { limit: scenario.totalBudgetUnits, period: 60 }, scenario.weight));
  const runtime = {
    now: clock.now,
    random,
    fetch: sentry.fetch,
    log: (line: LogLine) => {
      // A batch's line is one per real batch, counted with the invocations below.
      if (line.event === "tunnel_spool_batch") {
        logged.batchLineBytes = JSON.stringify(line).length + LINE_ATTRIBUTES_BYTES_ESTIMATE;
        return;
      }
      const bytes = JSON.stringify(line).length + LINE_ATTRIBUTES_BYTES_ESTIMATE;
      // A line said once per window (it carries `repeats`) is one however many envelopes the
      // window had: an isolate here sees a weight's fraction of production's, and says it as often.
      if ("repeats" in line) {
        logged.windowLines += 1;
        logged.windowBytes += bytes;
        return;
      }
      logged.lines += 1;
      logged.bytes += bytes;
      if (line.event === "tunnel_spool") logged.spoolLines += 1;
    },
  };
  // One tunnel per isolate, as each isolate builds its own: the same options, its own breakers and memory.
  const tunnels = Array.from({ length: scenario.isolates }, (_, isolate) =>
    createTunnel(
      {
        dsn: PROJECTS[0]!.dsn,
        allowedDsns: PROJECTS.slice(1).map(({ dsn }) => dsn),
        timeoutMs: scenario.timeoutMs,
        limiter: EVERY_CLIENT,
        spool: spool({ queue, bucket: bucket as unknown as R2Bucket, clientBudget: EVERY_CLIENT, totalBudget: totalBudgets[isolate % scenario.locations]! }),
        analytics: {
          writeDataPoint: (point) => {
            if (point?.blobs?.[0] === "spool") spoolDataPoints += 1;
          },
        },
      },
      runtime,
    ),
  );

  const spooled = new Set<string>();
  let refused = 0;
  let largeLost = 0;
  let probes = 0;
  let consumerTurn = 0;
  let consumerInvocations = 0;
  let cpuMicros = 0;
  let drainedAt: number | undefined;
  let nextId = 0;
  const perTick = scenario.perSecond / scenario.weight;
  let owed = 0;

  for (; now < OUTAGE.to + AFTER_RECOVERY_AT_MOST; now += SECOND) {
    const inOutage = now >= OUTAGE.from && now < OUTAGE.to;
    owed += perTick;
    for (; owed >= 1; owed -= 1) {
      const project = pick(PROJECTS, random());
      const id = (nextId++).toString(16).padStart(32, "0");
      const body = envelope(project.dsn, id, pick(scenario.sizes, random()), now, random);
      const tunnel = tunnels[Math.floor(random() * tunnels.length)]!;
      const asked = sentry.requests;
      const cpu = process.cpuUsage();
      const answer = (await tunnel.handle(
        new Request("https://app.example/monitoring?o=4501&p=4502&r=us", {
          method: "POST",
          body: arriving(body),
          headers: { "content-length": String(body.byteLength), "cf-connecting-ip": `198.51.100.${nextId % 200}` },
          duplex: "half",
        } as RequestInit),
      ))!;
      if (inOutage) {
        cpuMicros += process.cpuUsage(cpu).user;
        probes += sentry.requests - asked;
      }
      await answer.arrayBuffer();
      if (answer.status === 202) spooled.add(id);
      else if (answer.status >= 500) refused += scenario.weight;
      if (answer.status >= 300 && body.byteLength > STREAMED_OVER_BYTES) largeLost += scenario.weight;
    }

    // The consumer: batches as they come due, as many as its invocations' wall time allows this second.
    let slotMs = QUEUE_LIMITS.consumerConcurrency * SECOND;
    for (const [name, model] of [
      ["tunnel-spool", queue],
      ["tunnel-spool-dead", deadQueue],
    ] as const) {
      while (slotMs > 0) {
        const next = model.nextBatch(name, scenario.batchSize);
        if (!next) break;
        const asked = sentry.requests;
        const hung = sentry.hung;
        const cpu = process.cpuUsage();
        let threw = false;
        try {
          // Each batch to the next isolate in turn, as the queue's consumers land where they do.
          await tunnels[consumerTurn++ % tunnels.length]!.queue(next.batch);
        } catch {
          threw = true;
        }
        cpuMicros += process.cpuUsage(cpu).user;
        next.settle(threw);
        // The real batches this one stands for: as full as the queue had them due.
        const invocations = Math.ceil((next.batch.messages.length * scenario.weight) / scenario.batchSize);
        consumerInvocations += invocations;
        const asking = sentry.requests - asked;
        if (inOutage) probes += asking;
        const wallMs = sentry.hung > hung ? PRODUCTION_DEADLINE_MS : asking > 0 ? Math.ceil(asking / CONNECTIONS_PER_INVOCATION) * SENTRY_ANSWER_MS : BATCH_WITHOUT_SENTRY_MS;
        slotMs -= wallMs * invocations;
      }
    }
    if (now >= OUTAGE.to && drainedAt === undefined && queue.backlog === 0) {
      drainedAt = now;
      break;
    }
  }

  const lost = [...spooled].filter((id) => !sentry.delivered.has(id)).length * scenario.weight;
  let peakDrain = 0;
  for (const [project, perMinute] of sentry.takenPerMinute) {
    const usual = usualPerMinute.get(project)!;
    for (const [minute, taken] of perMinute) if (minute * MINUTE >= OUTAGE.to) peakDrain = Math.max(peakDrain, taken / usual);
  }
  const units = {
    queueOperations: queue.counts.operations + deadQueue.counts.operations,
    r2ClassA: bucket.counts.classA,
    r2ClassB: bucket.counts.classB,
    // A data point and a line per batch, besides those per envelope.
    dataPoints: spoolDataPoints * scenario.weight + consumerInvocations,
    logEvents: logged.lines * scenario.weight + logged.windowLines + consumerInvocations,
    requests: consumerInvocations,
    cpuMs: (cpuMicros / 1000) * scenario.weight,
  };
  const costUsd = (Object.keys(units) as (keyof typeof units)[]).reduce((sum, name) => sum + (units[name] / 1e6) * USD_PER_MILLION[name], 0);
  const logsUsdPerEvent = (units.logEvents / 1e6) * USD_PER_MILLION.logEvents;
  const logBytes = logged.bytes * scenario.weight + logged.windowBytes + logged.batchLineBytes * consumerInvocations;
  const logsUsdPerGb = (logBytes / 1e9) * LOGS_USD_PER_GB;
  return {
    lost,
    refused,
    largeLost,
    probesPerMinute: probes / ((OUTAGE.to - OUTAGE.from) / MINUTE),
    peakWrites: queue.counts.peakWritesPerSecond,
    peakBacklogGB: queue.counts.peakBacklogBytes / 1e9,
    costUsd,
    costUsdFromDecember: costUsd - logsUsdPerEvent + logsUsdPerGb,
    drainedMinutes: drainedAt === undefined ? undefined : (drainedAt - OUTAGE.to) / MINUTE,
    peakDrain,
    table: {
      "envelopes in the outage": scenario.perSecond * 3600,
      "spooled (202)": spooled.size * scenario.weight,
      "refused (5xx to the client)": refused,
      "total byte budget: 256 KiB units refused": totalBudgets.reduce((sum, budget) => sum + budget.refused, 0),
      "large envelopes (over 64 KiB) answered an error": largeLost,
      "queue writes": queue.counts.writes,
      "queue writes refused": queue.counts.refusedWrites,
      "queue deliveries (reads)": queue.counts.deliveries,
      "queue operations": units.queueOperations,
      "dead-lettered": queue.counts.deadLettered,
      "R2 writes / reads": `${units.r2ClassA} / ${units.r2ClassB}`,
      "requests to Sentry": sentry.requests * scenario.weight,
      "Sentry's spike 429s": sentry.spikeRefusals,
      "spool log lines": logged.spoolLines * scenario.weight,
      "lines said once per window (stored while Sentry is known down)": logged.windowLines,
      "log events": units.logEvents,
      "log GB (lines + an estimated 1 KB of attributes each)": (logBytes / 1e9).toFixed(2),
      "USD: queue operations": ((units.queueOperations / 1e6) * USD_PER_MILLION.queueOperations).toFixed(2),
      "USD: R2": ((units.r2ClassA / 1e6) * USD_PER_MILLION.r2ClassA + (units.r2ClassB / 1e6) * USD_PER_MILLION.r2ClassB).toFixed(2),
      "USD: data points": ((units.dataPoints / 1e6) * USD_PER_MILLION.dataPoints).toFixed(2),
      "USD: log events, per event (to 2026-11-30) / per GB (from 2026-12-01)": `${logsUsdPerEvent.toFixed(2)} / ${logsUsdPerGb.toFixed(2)}`,
      "USD: requests and CPU": ((units.requests / 1e6) * USD_PER_MILLION.requests + (units.cpuMs / 1e6) * USD_PER_MILLION.cpuMs).toFixed(2),
      "spool data points": units.dataPoints,
      "consumer invocations": consumerInvocations,
      "CPU ms (Node's, an estimate of workerd's)": Math.round(units.cpuMs),
    },
  };
}

/** One isolate in one location, every envelope under 64 KiB: the outage's hour, apart from its first moments. */
const ONE_ISOLATE = { isolates: 1, locations: 1, sizes: SIZES, timeoutMs: 10 } as const;

const SCENARIOS: Scenario[] = [
  // A large site as production runs it: a hundred isolates in ten locations, each with its own
  // breakers and memory, and a tenth of the envelopes streaming. Weighted less than the others, so
  // that each isolate meets an outage's first envelopes as production's would.
  {
    name: "1000/s fast-5xx, 100 isolates, a tenth over 64 KiB",
    perSecond: 1_000,
    kind: "fast-5xx",
    weight: 20,
    batchSize: 100,
    totalBudgetUnits: 2_000,
    isolates: 100,
    locations: 10,
    sizes: SIZES_WITH_LARGE,
    timeoutMs: 5_000,
  },
  // A site this large sets the consumer's batch to 100, the most: fewer invocations and lines.
  { name: "1000/s fast-5xx", perSecond: 1_000, kind: "fast-5xx", weight: 100, batchSize: 100, totalBudgetUnits: 2_000, ...ONE_ISOLATE },
  { name: "1000/s hang", perSecond: 1_000, kind: "hang", weight: 100, batchSize: 100, totalBudgetUnits: 2_000, ...ONE_ISOLATE },
  // The same site left on wrangler.toml's settings, to show what the batch size buys.
  { name: "1000/s fast-5xx on wrangler.toml's settings", perSecond: 1_000, kind: "fast-5xx", weight: 100, batchSize: 10, totalBudgetUnits: 2_000, ...ONE_ISOLATE },
  { name: "10/s fast-5xx", perSecond: 10, kind: "fast-5xx", weight: 1, batchSize: 10, totalBudgetUnits: 2_000, ...ONE_ISOLATE },
  { name: "10/s hang", perSecond: 10, kind: "hang", weight: 1, batchSize: 10, totalBudgetUnits: 2_000, ...ONE_ISOLATE },
];

it("holds a one-hour Sentry outage at 10 and 1,000 envelopes a second (a simulation on published limits)", { timeout: 3_600_000 }, async () => {
  installWorkerdStreams();
  const summaries: string[] = [];
  // `BENCH_SPOOL=<name>` runs one scenario.
  for (const scenario of SCENARIOS.filter(({ name }) => !process.env.BENCH_SPOOL || name === process.env.BENCH_SPOOL)) {
    const started = Date.now();
    const outcome = await simulate(scenario);
    console.log(`\n${scenario.name} (each simulated envelope stands for ${scenario.weight}; ${((Date.now() - started) / 1000).toFixed(0)} s to simulate)`);
    console.table(outcome.table);
    summaries.push(
      `spool-scale ${scenario.name}: ${scenario.isolates} isolates, lost ${outcome.lost}, large lost ${outcome.largeLost}, refused ${outcome.refused}, ` +
        `probes ${Math.round(outcome.probesPerMinute)}/min, peak writes ${outcome.peakWrites}/s, ` +
        `peak backlog ${outcome.peakBacklogGB.toFixed(1)} GB, cost ${outcome.costUsd.toFixed(2)} USD (${outcome.costUsdFromDecember.toFixed(2)} USD on the 2026-12-01 log meter), ` +
        `${outcome.drainedMinutes === undefined ? "not drained within 4 h of recovery" : `drained ${Math.round(outcome.drainedMinutes)} min after recovery`}, ` +
        `peak drain ${outcome.peakDrain.toFixed(1)}x the project's rate`,
    );
  }
  console.log(`\n${summaries.join("\n")}`);
});
