import { ConfigError, type VariableReader } from "../shared/variables.ts";

/** Cloudflare's rule for a queue's name: lowercase letters, digits and dashes, at most 63. */
const QUEUE_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** The queue's own limit on `max_retries`. */
const MAX_RETRIES_LIMIT = 100;

/** The spool's queues as `wrangler.toml` names and configures them. */
export interface SpoolQueues {
  spoolQueue: string;
  deadLetterQueue: string;
  /**
   * The spool consumer's `max_retries` in `wrangler.toml`. A message is held with `retry()`, which
   * the queue counts: one delivered this often is sent again as a new message instead, so that the
   * queue never dead-letters an envelope only for having waited long. A value below the file's costs
   * a write now and then; one above it would let the queue give envelopes up.
   */
  spoolMaxRetries: number;
}

type QueueVariable = "TUNNEL_SPOOL_QUEUE_NAME" | "TUNNEL_DEAD_LETTER_QUEUE_NAME" | "TUNNEL_SPOOL_MAX_RETRIES";

/** Reads them; one queue cannot be both, or its batches would be read as the other's. */
export function readSpoolQueues(read: VariableReader<QueueVariable>): SpoolQueues {
  const named = (variable: QueueVariable, fallback: string) => {
    const value = read.text(variable) || fallback;
    if (!QUEUE_NAME.test(value)) throw new ConfigError(variable, `must be a queue's name as wrangler.toml gives it (lowercase letters, digits and -), got "${value}"`);
    return value;
  };
  const spoolQueue = named("TUNNEL_SPOOL_QUEUE_NAME", "tunnel-spool");
  const deadLetterQueue = named("TUNNEL_DEAD_LETTER_QUEUE_NAME", "tunnel-spool-dead");
  if (spoolQueue === deadLetterQueue) throw new ConfigError("TUNNEL_DEAD_LETTER_QUEUE_NAME", `names the spool's own queue, "${spoolQueue}": the dead-letter queue must be another`);
  const spoolMaxRetries = read.positiveInteger("TUNNEL_SPOOL_MAX_RETRIES", 5);
  if (spoolMaxRetries > MAX_RETRIES_LIMIT) throw new ConfigError("TUNNEL_SPOOL_MAX_RETRIES", `must be at most ${MAX_RETRIES_LIMIT}, the queue's own limit, got "${spoolMaxRetries}"`);
  return { spoolQueue, deadLetterQueue, spoolMaxRetries };
}
