/**
 * Lets the isolate serve what waits (a visitor's envelope, a timer) before the watch goes on: its
 * reading and matching run in the isolate that serves the site, where JavaScript that never
 * awaits a macrotask holds up every request, and where the clock stands still until it does.
 */
export function letRequestsThrough(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** Raised when the run's time is spent while the engine is still being asked. */
export class RunOutOfTime extends Error {}
