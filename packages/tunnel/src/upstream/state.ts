import type { DsnAllowList } from "./allow-list.ts";
import { UpstreamBreaker } from "./breaker.ts";
import { SentryLimits } from "./sentry-limits.ts";

/** What one tunnel has learnt of Sentry: its rate limits, and a breaker per upstream URL of the allow-list. */
export interface UpstreamState {
  limits: SentryLimits;
  breakers: ReadonlyMap<string, UpstreamBreaker>;
}

const STATES = new WeakMap<DsnAllowList, UpstreamState>();

/**
 * One tunnel's state of Sentry (its allow-list is one per tunnel), built by the first capability
 * that acts on it (the spool, CSP reports) and shared by the others, so that an ingest failing
 * envelopes holds reports too. A tunnel given neither carries none of it: it forwards every
 * envelope, and passes Sentry's rate limits on to the SDK, which keeps them.
 */
export function upstreamStateOf(allowList: DsnAllowList, now: () => number): UpstreamState {
  let state = STATES.get(allowList);
  if (!state) {
    const breakers = new Map([...allowList.values()].map(({ upstreamUrl }) => [upstreamUrl, new UpstreamBreaker(now)]));
    state = { limits: new SentryLimits(now), breakers };
    STATES.set(allowList, state);
  }
  return state;
}

/**
 * The spool consumer's breakers, one per live breaker and paired with it: opened by one failure,
 * probing once per `retrySeconds`, and each learning at once of the other's success.
 */
export function consumerBreakersFor(live: ReadonlyMap<string, UpstreamBreaker>, now: () => number, retrySeconds: number): ReadonlyMap<string, UpstreamBreaker> {
  return new Map(
    [...live].map(([url, breaker]) => {
      const consumer = new UpstreamBreaker(now, { failuresToOpen: 1, coolDownMs: retrySeconds * 1000 });
      consumer.pairWith(breaker);
      return [url, consumer];
    }),
  );
}
