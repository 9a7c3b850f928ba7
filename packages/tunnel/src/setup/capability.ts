import type { Delivery } from "../stages/deliver.ts";
import type { Delivered } from "../stages/shipment.ts";
import type { Keeping } from "../stages/keep.ts";
import type { ReportTarget } from "../stages/admit.ts";
import type { TunnelSettings } from "./settings.ts";
import type { SettingNames } from "../shared/checks.ts";
import type { UnversionedLine } from "../stages/log-line.ts";
import type { Deadline } from "../shared/deadline.ts";
import type { ScanCompressed } from "../envelope/head.ts";
import type { SpoolHeartbeatLine } from "../spool/heartbeat.ts";
import type { ReadRest } from "../spool/in-hand.ts";
import type { DsnAllowList } from "../upstream/allow-list.ts";
import type { ClientReports } from "../upstream/client-reports.ts";

/** The key under which a capability keeps how it is built: not for hand-building. */
export const BUILD: unique symbol = Symbol("build");

/** What one tunnel shares with a capability it is given, built once per tunnel. */
export interface CoreParts {
  settings: TunnelSettings;
  names: SettingNames;
  allowList: DsnAllowList;
  reports: ClientReports;
  /** The lines a capability writes; routine ones only when forwarded envelopes are logged. */
  log: (line: UnversionedLine) => void;
  analytics: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  now: () => number;
  random: () => number;
  fetch: typeof fetch | undefined;
}

/** What the spool adds to a tunnel. */
export interface SpoolParts {
  /** Its part of the live path: Sentry's limits, the breaker, and what is stored when Sentry cannot take it. */
  keep: Keeping;
  /** Reads a large body whole in the memory kept in hand, so that it can be stored if Sentry fails under it (`receive.ts`). */
  readRest: ReadRest;
  queue: string;
  deadLetterQueue: string;
  consume: (batch: MessageBatch<unknown>) => Promise<void>;
  settleDeadLetters: (batch: MessageBatch<unknown>) => Promise<void>;
  heartbeat: () => Promise<SpoolHeartbeatLine>;
  /** Its part of the start line. */
  described: { spool: string; large_bodies: string };
}

/** What CSP reports add: the stage that forwards one. */
export interface CspParts {
  forward: (request: Request, deadline: Deadline, target: ReportTarget, delivery: Delivery) => Promise<Delivered>;
  /** What envelopes' answers teach of the ingest, without a spool to store in: the spool's, when given, learns the same. */
  keep: Keeping;
}

/** What compressed bodies add: the scan of a compressed body's header line. */
export interface CompressedParts {
  scan: ScanCompressed;
}

interface CapabilityParts {
  spool: SpoolParts;
  csp: CspParts;
  compressed: CompressedParts;
}

/**
 * A capability a tunnel is given in its options (`spool(…)`, `cspReports()`,
 * `compressedBodies()`): built with the tunnel's shared parts when `createTunnel` runs, so that a
 * Worker that does not import it does not carry it.
 */
export interface TunnelCapability<Kind extends keyof CapabilityParts> {
  readonly kind: Kind;
  readonly [BUILD]: (core: CoreParts) => CapabilityParts[Kind];
}
