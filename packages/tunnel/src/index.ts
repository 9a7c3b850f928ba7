/**
 * The package's entry, `@edge-monitoring/tunnel`: what a Worker imports to serve the tunnel. The
 * README documents each export. Tests and measurements also have `@edge-monitoring/tunnel/testing`;
 * nothing else of the package can be imported (its `exports`).
 */
export { createTunnelWorker, type TunnelWorker } from "./worker.ts";
export { createTunnel, type TunnelOptions } from "./options.ts";
export { readTunnelSettings, tunnelUrlFor, type AppFacts, type TunnelSettings, type TunnelVariables } from "./settings.ts";
export type { TunnelBindings, TunnelRuntime } from "./bindings.ts";
export { ConfigError, variableReader } from "./shared/variables.ts";
export { RepeatedLines } from "./request/repeated-lines.ts";
export type { LogLine } from "./log-line.ts";
export { isTunnelPathSpelling, reportPathOf, TUNNEL_PATH } from "./request/path.ts";
export { projectOf, upstreamUrlFor, type ProjectIdentity } from "./upstream/ingest.ts";
export type { SpoolStats } from "./spool/stats.ts";
export type { SpoolHeartbeatLine } from "./spool/heartbeat.ts";
export type { TunnelDescription } from "./describe.ts";
