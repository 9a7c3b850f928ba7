import type { Answer } from "./answers.ts";
import type { EnvelopeFacts } from "../spool/store.ts";

/** What the delivery stage (`deliver.ts`) made of one envelope, and the spool's stage (`keep.ts`) of it instead. */
export interface Delivered {
  answer: Answer;
  /** The bytes sent upstream, when a forward counted them. */
  bytes: number | undefined;
  upstreamStatus: number | null;
  /**
   * Answered without asking Sentry, which is known to be down (its breaker open): stored, or not
   * stored, a loss. What was stored is the same news as every other envelope stored so, and its
   * line is said once per project and window.
   */
  sentryKnownDown?: true;
}

/** One envelope on its way: what storing it needs besides its body. */
export interface Shipment {
  stored: EnvelopeFacts;
  /** Where it goes: its breaker's key. */
  upstreamUrl: string;
  clientIp: string | null;
  /** The body, when it was read whole (a small one, or one that ended with its header line). */
  whole: Uint8Array | undefined;
  /** The body read whole and not compressed, whose items a client report can count. */
  plain: Uint8Array | undefined;
  /** How long the stored envelope waits before the consumer reads it. */
  delaySeconds?: number;
}

