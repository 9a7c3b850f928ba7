import { createClientReportEnvelope, envelopeItemTypeToDataCategory, serializeEnvelope, type ClientReport, type EnvelopeItemType } from "@sentry/core";

import { envelopeItemTypes } from "../envelope/items.ts";
import { utf8Bytes, type BodyChunk } from "../shared/body.ts";
import { Deadline } from "../shared/deadline.ts";
import type { DsnAllowList } from "./allow-list.ts";
import { fateOfStatus } from "./fate.ts";
import { forwardWhole } from "./forward.ts";

/**
 * Why the edge dropped an envelope on its own account, in the SDKs' own words, so that Sentry's
 * Stats page shows it beside what the SDKs drop:
 * - `ratelimit_backoff`: Sentry's rate limit, held at the edge without calling Sentry;
 * - `network_error`: Sentry could not take it for 24 hours (expired), or could not take it now and
 *   the spool could not store it (`spool_unavailable`);
 * - `queue_overflow`: over the spool's byte budget;
 * - `buffer_overflow`: Sentry failed under a streaming body larger than the spool keeps in hand;
 * - `send_error`: its DSN is no longer allowed (counted in the app's own project);
 * - `internal_sdk_error`: the spool could not handle the message (dead-lettered, unreadable);
 * - `before_send`: a host's own report its rules drop (the app's, of a request another site's page made).
 */
/** The data category Sentry files a CSP report under, in the client reports of what the edge dropped. */
export const SECURITY_CATEGORY = "security";

export type DiscardReason = "ratelimit_backoff" | "network_error" | "queue_overflow" | "buffer_overflow" | "send_error" | "internal_sdk_error" | "before_send";

interface Discarded {
  reason: DiscardReason;
  category: string;
  quantity: number;
}

/** A client report due for one DSN: the envelope to send, and its counts, to give back if it fails. */
export interface DueReport {
  dsn: string;
  body: BodyChunk;
  discarded: Discarded[];
}

/** Distinct (reason, category) pairs kept per DSN: reasons × the data categories Sentry has. */
const MAX_PAIRS_PER_DSN = 256;

/**
 * Counts what the edge dropped, per DSN, reason and data category, and hands them out as
 * `client_report` envelopes, the format the SDKs send (`discarded_events` of `reason`, `category`,
 * `quantity`): at most one per DSN per `periodMs`. Only DSNs of the allow-list are counted, so its
 * memory is bounded by the allow-list.
 */
export class DiscardLedger {
  readonly #pending = new Map<string, Map<string, Discarded>>();
  readonly #lastSent = new Map<string, number>();
  readonly #periodMs: number;

  constructor(periodMs: number) {
    this.#periodMs = periodMs;
  }

  /** One dropped envelope: one count for each of its items' categories. */
  count(dsn: string, reason: DiscardReason, categories: readonly string[]): void {
    for (const category of categories) this.#add(dsn, { reason, category, quantity: 1 });
  }

  /** How long until the next report is due, or `undefined` when nothing is pending. */
  dueIn(now: number): number | undefined {
    let soonest: number | undefined;
    for (const dsn of this.#pending.keys()) {
      const wait = Math.max(0, (this.#lastSent.get(dsn) ?? -Infinity) + this.#periodMs - now);
      soonest = soonest === undefined ? wait : Math.min(soonest, wait);
    }
    return soonest;
  }

  /** The reports due now; their counts leave the ledger. */
  takeDue(now: number): DueReport[] {
    const due: DueReport[] = [];
    for (const [dsn, byPair] of this.#pending) {
      if ((this.#lastSent.get(dsn) ?? -Infinity) + this.#periodMs > now) continue;
      const discarded = [...byPair.values()];
      this.#pending.delete(dsn);
      this.#lastSent.set(dsn, now);
      due.push({ dsn, discarded, body: clientReportEnvelope(dsn, discarded, now) });
    }
    return due;
  }

  /** A report that could not be sent: its counts go back, to ride with the next one. */
  giveBack(report: DueReport): void {
    for (const discarded of report.discarded) this.#add(report.dsn, discarded);
  }

  #add(dsn: string, { reason, category, quantity }: Discarded): void {
    let byPair = this.#pending.get(dsn);
    if (!byPair) this.#pending.set(dsn, (byPair = new Map()));
    const key = `${reason}\t${category}`;
    const known = byPair.get(key);
    if (known) known.quantity += quantity;
    else if (byPair.size < MAX_PAIRS_PER_DSN) byPair.set(key, { reason, category, quantity });
  }
}

/**
 * The data categories of an envelope's items, one per item, as Sentry counts them; `["default"]`
 * when the items cannot be read here (a compressed or streamed body).
 */
export function discardedCategories(body: Uint8Array | undefined): string[] {
  const types = (body && envelopeItemTypes(body)) ?? [];
  return types.length > 0 ? types.map(categoryOf) : ["default"];
}

/** Sentry's category for an item type; a type Sentry does not know (a client wrote it) counts as `default`. */
function categoryOf(type: string): string {
  const category: unknown = KNOWN_ITEM_TYPES.has(type) ? (RELAY_CATEGORIES[type] ?? envelopeItemTypeToDataCategory(type as EnvelopeItemType)) : undefined;
  return typeof category === "string" ? category : "default";
}

/**
 * Where a line of `@sentry/core` the package's peer range allows names a category Relay no longer
 * counts: the 10 line calls a `trace_metric` item `metric`; Relay's category, and the 11 line's, is
 * `trace_metric`. A test holds the two lines equal besides these.
 */
export const RELAY_CATEGORIES: Readonly<Record<string, string>> = { trace_metric: "trace_metric" };

/**
 * Kept here because `@sentry/core` has them only as a type (`EnvelopeItemType`), and its
 * `envelopeItemTypeToDataCategory` hands a type it does not know back as its own category, where
 * Sentry counts such an item as `default` (a test holds both).
 */
export const KNOWN_ITEM_TYPES: ReadonlySet<string> = new Set([
  "event", "transaction", "session", "sessions", "attachment", "client_report", "user_report", "profile", "profile_chunk",
  "replay_event", "replay_recording", "check_in", "feedback", "span", "statsd", "log", "trace_metric", "raw_security",
]);

/**
 * The client report as the SDKs build and write it (`createClientReportEnvelope`,
 * `serializeEnvelope`), stamped with when it is sent. The reasons are the SDKs' own; the categories
 * are Sentry's, as `discardedCategories` names them.
 */
function clientReportEnvelope(dsn: string, discarded: readonly Discarded[], now: number): BodyChunk {
  const envelope = createClientReportEnvelope(discarded as ClientReport["discarded_events"], dsn, now / 1000);
  envelope[0]["sent_at"] = new Date(now).toISOString();
  const serialized = serializeEnvelope(envelope);
  return typeof serialized === "string" ? utf8Bytes(serialized) : (serialized as BodyChunk);
}

/** The edge's client reports: counted as envelopes are dropped, sent at most once per DSN per period. */
export interface ClientReports {
  /** Counts one dropped envelope for `dsn`, and sees that its report goes out within the period. */
  count(dsn: string, reason: DiscardReason, categories: readonly string[]): void;
  /** Sends the reports due now; a report Sentry does not take keeps its counts for the next one. */
  flush(): Promise<void>;
}

interface ClientReportSettings {
  /** Reports go only to allowed DSNs, each to its own ingest. */
  allowList: DsnAllowList;
  timeoutMs: number;
}

interface ClientReportRuntime {
  /** Keeps the isolate alive for a scheduled send (`waitUntil`); without it, only `flush` sends. */
  background?: ((work: Promise<unknown>) => void) | undefined;
  periodMs?: number;
  now?: () => number;
  fetch?: typeof fetch | undefined;
}

/** One report per DSN per this; within `waitUntil`'s 30 s, so a scheduled send is never cut off. */
const REPORT_PERIOD_MS = 20_000;
/** Drops counted within this of the first go out in one report. */
const BATCH_MS = 1_000;

export function createClientReports(settings: ClientReportSettings, runtime: ClientReportRuntime = {}): ClientReports {
  const { background, periodMs = REPORT_PERIOD_MS, now = Date.now, fetch } = runtime;
  const { allowList } = settings;
  const ledger = new DiscardLedger(periodMs);
  let scheduled = false;

  async function send(report: DueReport): Promise<void> {
    const url = allowList.get(report.dsn)?.upstreamUrl;
    if (!url) return;
    const deadline = new Deadline(settings.timeoutMs);
    try {
      const forwarded = await forwardWhole({
        url,
        headers: { "content-type": "application/x-sentry-envelope" },
        body: report.body,
        deadline,
        fetch,
      });
      if (!forwarded.ok || fateOfStatus(forwarded.answer.status) === "unavailable") ledger.giveBack(report);
    } finally {
      deadline.end();
    }
  }

  async function flush(): Promise<void> {
    await Promise.all(ledger.takeDue(now()).map(send));
  }

  /** One send at a time is waited for; counts that arrive meanwhile ride with it or the next. */
  function schedule(): void {
    const due = ledger.dueIn(now());
    if (scheduled || !background || due === undefined) return;
    scheduled = true;
    background(
      new Promise((resolve) => setTimeout(resolve, Math.max(BATCH_MS, due)))
        .then(flush)
        .catch(() => {})
        .finally(() => {
          scheduled = false;
          schedule();
        }),
    );
  }

  return {
    count(dsn, reason, categories) {
      ledger.count(dsn, reason, categories);
      schedule();
    },
    flush,
  };
}
