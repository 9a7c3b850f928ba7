/**
 * What this isolate's tunnel stored and its consumer settled, since the isolate started. Counts of
 * one isolate, not of the whole deployment: Cloudflare runs many (the queue's own depth is in the
 * batch and heartbeat lines, `record.ts`). Under `wrangler dev` there is one, so they are the
 * spool's whole story there.
 */
export class SpoolStats {
  stored = 0;
  delivered = 0;
  /** Expired, refused by Sentry with a 4xx, or lost from R2. */
  dropped = 0;

  /** Stored and not yet settled, as far as this isolate knows. */
  get pending(): number {
    return Math.max(0, this.stored - this.delivered - this.dropped);
  }
}
