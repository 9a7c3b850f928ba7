import type { SettingNames } from "../shared/checks.ts";
import { ConfigError } from "../shared/variables.ts";

/** Cloudflare's rule for a queue's name: lowercase letters, digits and dashes, at most 63. */
const QUEUE_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The spool consumer's `max_retries` in the README's `wrangler.toml`, which must not be smaller. A
 * message is held with `retry()`, which the queue counts: one delivered this often is sent again
 * as a new message instead, so that the queue never dead-letters an envelope only for having
 * waited long. A `max_retries` above it costs a write now and then; one below would let the queue
 * give envelopes up.
 */
export const SPOOL_MAX_RETRIES = 5;

/** The spool's queues as `wrangler.toml` names them. */
export interface SpoolQueues {
  queue: string;
  deadLetterQueue: string;
}

interface QueueOptions {
  queueName?: string | undefined;
  deadLetterQueueName?: string | undefined;
}

/** Checks them; one queue cannot be both, or its batches would be read as the other's. */
export function checkedQueues(options: QueueOptions, names: SettingNames): SpoolQueues {
  const named = (option: "queueName" | "deadLetterQueueName", fallback: string) => {
    const value = options[option] ?? fallback;
    if (!QUEUE_NAME.test(value)) throw new ConfigError(names(option), `must be a queue's name as wrangler.toml gives it (lowercase letters, digits and -), got "${value}"`);
    return value;
  };
  const queue = named("queueName", "tunnel-spool");
  const deadLetterQueue = named("deadLetterQueueName", "tunnel-spool-dead");
  if (queue === deadLetterQueue) throw new ConfigError(names("deadLetterQueueName"), `names the spool's own queue, "${queue}": the dead-letter queue must be another`);
  return { queue, deadLetterQueue };
}

/**
 * The queues this isolate's tunnels consume, each by the routes of the tunnel that claimed it:
 * `queue()` hands a batch to the tunnel whose queue name it bears, so two tunnels under one name
 * would take each other's envelopes, or leave them to the host.
 */
const claimedQueues = new Map<string, string>();

/** Throws when another tunnel of this isolate (other routes) consumes a queue of the same name. */
export function claimQueues(queues: SpoolQueues, claimant: string, names: SettingNames): void {
  for (const [name, option] of [
    [queues.queue, "queueName"],
    [queues.deadLetterQueue, "deadLetterQueueName"],
  ] as const) {
    const other = claimedQueues.get(name);
    if (other !== undefined && other !== claimant) {
      throw new ConfigError(names(option), `is "${name}", which another tunnel in this Worker (${other}) consumes: give each tunnel's spool a queue of its own, and its name here`);
    }
  }
  claimedQueues.set(queues.queue, claimant).set(queues.deadLetterQueue, claimant);
}
