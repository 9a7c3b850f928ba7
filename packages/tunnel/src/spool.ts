/**
 * `@edge-monitoring/tunnel/spool`: where envelopes Sentry cannot take now are kept, in a Queue
 * (and R2 for large bodies), and delivered from by the Worker's own `queue()`. Given to a tunnel
 * as `createTunnel({ …, spool: spool({ … }) })`; a Worker that does not import it does not carry it.
 */
export { spool, spoolFromEnv, type SpoolEnv, type SpoolOptions } from "./setup/spool.ts";
export type { SpoolHeartbeatLine } from "./spool/heartbeat.ts";
export type { SpooledEnvelope, SpoolQueue } from "./spool/store.ts";
