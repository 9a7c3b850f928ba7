/**
 * The spool's defaults, where `spool()` reads them and where the README's promise is checked
 * against them (`readme-promise.test.ts`): the figures an adopter is told are these.
 */
export const SPOOL_DEFAULTS = {
  /** The first retry's delay; each next twice as long, up to an hour (`decision.ts`). */
  retrySeconds: 10,
  /** A quarter of an isolate's 128 MB, held of large bodies on their way to Sentry. */
  inHandBytes: 32 * 1024 * 1024,
  /** An hour: Sentry failing that long, or a consumer stuck, is worth an alert. */
  maxAgeSeconds: 3600,
} as const;
