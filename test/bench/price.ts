/**
 * What an operator pays Cloudflare per envelope: the priced units one envelope uses, and
 * Cloudflare's published prices on the Workers Paid plan ($5 a month), as `docs/performance.md`
 * cites them with their pages and the date they were read.
 */

/** One priced unit: what the plan includes each month, and the price of each million past it. */
interface Price {
  unit: string;
  includedPerMonth: number;
  usdPerMillion: number;
}

export const PRICES = {
  requests: { unit: "requests", includedPerMonth: 10_000_000, usdPerMillion: 0.3 },
  cpuMs: { unit: "CPU ms", includedPerMonth: 30_000_000, usdPerMillion: 0.02 },
  /** Until 2026-11-30; from 2026-12-01 by size ({@link LOGS_FROM_DECEMBER}). */
  logEvents: { unit: "Workers Logs events", includedPerMonth: 20_000_000, usdPerMillion: 0.6 },
  /** Published, and "currently, you will not be billed": priced here as it will be. */
  dataPoints: { unit: "Analytics Engine data points", includedPerMonth: 10_000_000, usdPerMillion: 0.25 },
  /** Per 64 KB written, read or deleted. */
  queueOperations: { unit: "Queues operations", includedPerMonth: 1_000_000, usdPerMillion: 0.4 },
  r2ClassA: { unit: "R2 Class A (writes)", includedPerMonth: 1_000_000, usdPerMillion: 4.5 },
  r2ClassB: { unit: "R2 Class B (reads)", includedPerMonth: 10_000_000, usdPerMillion: 0.36 },
} as const satisfies Record<string, Price>;

/**
 * Workers Logs from 2026-12-01: Logs, Traces and Issues share one meter by size, the event's body
 * and the attributes Cloudflare adds, before compression; 50 GB ingested and 12 GB-month stored are
 * included, then $0.25 per GB ingested and $0.10 per GB-month stored, kept 7 days
 * (`../shared/platform-facts.md`). Until then, {@link PRICES}' `logEvents`, per event.
 */
export const LOGS_FROM_DECEMBER = {
  date: "2026-12-01",
  includedGbPerMonth: 50,
  usdPerGbIngested: 0.25,
  usdPerGbMonthStored: 0.1,
  retentionDays: 7,
} as const;

/** A GB ingested, and kept its 7 days: the storage is a quarter of a month's worth of it. */
export const LOGS_USD_PER_GB = LOGS_FROM_DECEMBER.usdPerGbIngested + LOGS_FROM_DECEMBER.usdPerGbMonthStored * (LOGS_FROM_DECEMBER.retentionDays / 30.44);

/** The published average event of the `workers` dataset, most of which are invocation logs. */
export const INVOCATION_LOG_BYTES = 4_840;
/**
 * What Cloudflare adds to one `console.log` line of ours (its request, script, level and time
 * attributes): not published, so an estimate; the line's own bytes are measured.
 */
export const LINE_ATTRIBUTES_BYTES_ESTIMATE = 1_000;

/** The two ways Workers Logs is billed: per event until 2026-11-30, per GB from 2026-12-01. */
export type LogMeter = "per-event" | "per-gb";

/** Per envelope: the priced units, and the bytes its log events weigh as the per-GB meter counts them. */
export type Units = Record<keyof typeof PRICES, number> & { logBytes: number };

export const NO_UNITS: Units = { requests: 0, cpuMs: 0, logEvents: 0, logBytes: 0, dataPoints: 0, queueOperations: 0, r2ClassA: 0, r2ClassB: 0 };

const PRICED = Object.keys(PRICES) as (keyof typeof PRICES)[];
/** The units priced per million under a meter: the per-GB meter prices log events by their bytes instead. */
const pricedUnder = (meter: LogMeter) => PRICED.filter((name) => meter === "per-event" || name !== "logEvents");

/** USD per million envelopes past the included amounts: each unit per envelope times its price. */
export function usdPerMillion(perEnvelope: Units, meter: LogMeter = "per-event"): number {
  const units = pricedUnder(meter).reduce((sum, name) => sum + perEnvelope[name] * PRICES[name].usdPerMillion, 0);
  return meter === "per-event" ? units : units + (perEnvelope.logBytes * 1_000_000 * LOGS_USD_PER_GB) / 1e9;
}

/** How many envelopes a month the plan's included amounts cover: the first unit to run out decides. */
export function envelopesIncluded(perEnvelope: Units, meter: LogMeter = "per-event"): number {
  const covered = pricedUnder(meter)
    .filter((name) => perEnvelope[name] > 0)
    .map((name) => PRICES[name].includedPerMonth / perEnvelope[name]);
  if (meter === "per-gb" && perEnvelope.logBytes > 0) covered.push((LOGS_FROM_DECEMBER.includedGbPerMonth * 1e9) / perEnvelope.logBytes);
  return Math.min(...covered);
}

/** The month's bill past the subscription for `envelopes` envelopes, each unit's included amount taken off first. */
export function usdForMonth(perEnvelope: Units, envelopes: number, meter: LogMeter = "per-event"): number {
  const units = pricedUnder(meter).reduce((sum, name) => {
    const used = perEnvelope[name] * envelopes;
    return sum + (Math.max(0, used - PRICES[name].includedPerMonth) / 1_000_000) * PRICES[name].usdPerMillion;
  }, 0);
  if (meter === "per-event") return units;
  return units + Math.max(0, (perEnvelope.logBytes * envelopes) / 1e9 - LOGS_FROM_DECEMBER.includedGbPerMonth) * LOGS_USD_PER_GB;
}

/**
 * The spool's units for one envelope stored once and delivered on the next try (`docs/delivery.md`):
 * a body under 128 KB is one queue message, written, read and deleted, each an operation per 64 KB;
 * a larger one goes to R2 (one write, one read) with a small message of its own.
 */
export function spooledUnits(bodyBytes: number): Partial<Units> {
  const chunks = (bytes: number) => Math.max(1, Math.ceil(bytes / (64 * 1024)));
  if (bodyBytes < 120_000) return { queueOperations: 3 * chunks(bodyBytes) };
  return { queueOperations: 3, r2ClassA: 1, r2ClassB: 1 };
}
