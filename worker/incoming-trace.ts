/** The Worker's own answers to what a client's `sentry-trace` and `baggage` would otherwise decide. */
export interface OwnTraceSettings {
  environment: string;
  release: string;
  /** The app's own DSN key; `undefined` when monitoring is not configured. */
  publicKey: string | undefined;
  sampleRate: number;
}

/**
 * What the Worker takes from a request's trace headers:
 * - `absent`: no `sentry-trace`, so the SDK starts a trace of its own; nothing to change.
 * - `dropped`: a `sentry-trace` that is not one; both headers go, and a new trace starts.
 * - `continued`: the client's trace and span ids, with the Worker's own decision and settings.
 */
export type IncomingTrace =
  | { kind: "absent" }
  | { kind: "dropped" }
  | { kind: "continued"; sentryTrace: string; baggage: string; sampled: boolean };

/** Trace and parent span id, lower-case hex as the SDKs write them, and an optional decision. */
const SENTRY_TRACE = /^[ \t]*([0-9a-f]{32})-([0-9a-f]{16})(?:-[01])?[ \t]*$/;
/** The W3C limit; a longer `baggage` is not read at all. */
const MAX_BAGGAGE_LENGTH = 8192;

/**
 * The trace headers the Worker's SDK should see, so that a client can continue a trace but not
 * decide for the Worker. The decision is `sample_rand < the Worker's own rate`: the app's own
 * browser carries the `sample_rand` the Worker gave its page, so its requests are decided as the
 * page was; a client without one gets a fresh draw. The dynamic sampling context, which Relay's
 * sampling rules and the trace header of every envelope read, is rebuilt from the Worker's own
 * environment, release, key and rate: a client's `sentry-environment`, `sentry-release` or
 * `sentry-sample_rate` never reaches Sentry.
 */
export function ownTrace(
  sentryTrace: string | null,
  baggage: string | null,
  own: OwnTraceSettings,
  random: () => number = Math.random,
): IncomingTrace {
  if (sentryTrace === null) return { kind: "absent" };
  const ids = SENTRY_TRACE.exec(sentryTrace);
  if (!ids) return { kind: "dropped" };
  const [, traceId, spanId] = ids as RegExpExecArray & [string, string, string];

  const claimedRand = sampleRandOf(baggage);
  const sampleRand = claimedRand ?? random();
  const sampled = sampleRand < own.sampleRate;
  const context: [string, string | undefined][] = [
    ["trace_id", traceId],
    ["sample_rand", String(sampleRand)],
    ["sample_rate", String(own.sampleRate)],
    ["sampled", String(sampled)],
    ["environment", own.environment],
    ["release", own.release],
    ["public_key", own.publicKey],
  ];
  return {
    kind: "continued",
    sentryTrace: `${traceId}-${spanId}-${sampled ? 1 : 0}`,
    baggage: context
      .filter((entry): entry is [string, string] => entry[1] !== undefined)
      .map(([key, value]) => `sentry-${key}=${encodeURIComponent(value)}`)
      .join(","),
    sampled,
  };
}

/** The client's `sentry-sample_rand`, when it is a number from 0 up to (not including) 1. */
function sampleRandOf(baggage: string | null): number | undefined {
  if (baggage === null || baggage.length > MAX_BAGGAGE_LENGTH) return undefined;
  for (const member of baggage.split(",")) {
    const [key, value] = member.split(";", 1)[0]!.split("=", 2).map((part) => part.trim());
    if (key !== "sentry-sample_rand" || value === undefined) continue;
    if (!/^(?:0(?:\.\d{1,20})?|\.\d{1,20})$/.test(value)) return undefined;
    return Number(value);
  }
  return undefined;
}
