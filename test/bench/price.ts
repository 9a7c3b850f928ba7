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
  logEvents: { unit: "Workers Logs events", includedPerMonth: 20_000_000, usdPerMillion: 0.6 },
  /** Published, and "currently, you will not be billed": priced here as it will be. */
  dataPoints: { unit: "Analytics Engine data points", includedPerMonth: 10_000_000, usdPerMillion: 0.25 },
  /** Per 64 KB written, read or deleted. */
  queueOperations: { unit: "Queues operations", includedPerMonth: 1_000_000, usdPerMillion: 0.4 },
  r2ClassA: { unit: "R2 Class A (writes)", includedPerMonth: 1_000_000, usdPerMillion: 4.5 },
  r2ClassB: { unit: "R2 Class B (reads)", includedPerMonth: 10_000_000, usdPerMillion: 0.36 },
} as const satisfies Record<string, Price>;

export type Units = Record<keyof typeof PRICES, number>;

export const NO_UNITS: Units = { requests: 0, cpuMs: 0, logEvents: 0, dataPoints: 0, queueOperations: 0, r2ClassA: 0, r2ClassB: 0 };

/** USD per million envelopes past the included amounts: each unit per envelope times its price. */
export function usdPerMillion(perEnvelope: Units): number {
  return (Object.keys(PRICES) as (keyof Units)[]).reduce((sum, name) => sum + perEnvelope[name] * PRICES[name].usdPerMillion, 0);
}

/** How many envelopes a month the plan's included amounts cover: the first unit to run out decides. */
export function envelopesIncluded(perEnvelope: Units): number {
  return Math.min(...(Object.keys(PRICES) as (keyof Units)[]).filter((name) => perEnvelope[name] > 0).map((name) => PRICES[name].includedPerMonth / perEnvelope[name]));
}

/** The month's bill past the subscription for `envelopes` envelopes, each unit's included amount taken off first. */
export function usdForMonth(perEnvelope: Units, envelopes: number): number {
  return (Object.keys(PRICES) as (keyof Units)[]).reduce((sum, name) => {
    const used = perEnvelope[name] * envelopes;
    return sum + (Math.max(0, used - PRICES[name].includedPerMonth) / 1_000_000) * PRICES[name].usdPerMillion;
  }, 0);
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
