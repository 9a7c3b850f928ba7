/**
 * The package's entry, `@edge-monitoring/tunnel`: one constructor, `createTunnel`, and what a
 * Worker reads its options with. Each capability beyond the core is an entry of its own
 * (`/spool`, `/csp`, `/hono`), and tests have `/testing`. The README documents each export.
 */
export { createTunnel, type ClientShare, type TunnelWorker } from "./setup/worker.ts";
export type { TunnelOptions, TunnelRuntime } from "./setup/options.ts";
export { optionsFromEnv, type TunnelEnv } from "./setup/from-env.ts";
export { ConfigError, variableReader } from "./shared/variables.ts";
export { RepeatedLines } from "./request/repeated-lines.ts";
export { dsnFacts } from "./upstream/ingest.ts";
export type { LogLine } from "./stages/log-line.ts";
export type { TunnelDescription } from "./setup/describe.ts";
