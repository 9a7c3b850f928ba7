/**
 * The tunnel's public surface: what the Worker entry, the Remix app and another Worker
 * (`docs/adopting.md`) import. Nothing outside `app/tunnel/` imports a module behind it, or behind
 * `testing.ts`, which tests and benchmarks use (`.ci/dependency-rules.ts` holds that, and the
 * layering inside).
 */
export { createTunnelWorker, type TunnelWorker } from "./worker.server";
export {
  readTunnelSettings,
  tunnelUrlFor,
  type AppFacts,
  type TunnelBindings,
  type TunnelRuntime,
  type TunnelSettings,
  type TunnelVariables,
} from "./settings.server";
export { ConfigError, variableReader } from "./shared/variables.server";
export type { LogLine } from "./log-line.server";
export { isTunnelPathSpelling, reportPathOf, TUNNEL_PATH } from "./request/path";
export { projectOf, upstreamUrlFor, type ProjectIdentity } from "./upstream/ingest.server";
export { DEAD_LETTER_QUEUE } from "./spool/dead-letters.server";
export type { SpoolStats } from "./spool/stats.server";
