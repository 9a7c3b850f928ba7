/**
 * The tunnel's public surface: what the Worker entry, the Remix app, the tests and another Worker
 * (`docs/adopting.md`) import. Nothing outside `app/tunnel/` imports a module behind it
 * (`.dependency-cruiser.cjs` holds that, and the layering inside).
 */
export { createTunnelWorker, type TunnelWorker } from "./worker.server";
export { createTunnel, type Tunnel } from "./tunnel.server";
export type { TunnelEnv, TunnelRuntime, TunnelSettings } from "./settings.server";
export type { TunnelLogLine } from "./log-line.server";
export { TUNNEL_ANSWERS, type TunnelAnswerCode } from "./answers.server";
export { isTunnelPathSpelling, reportPathOf, TUNNEL_PATH } from "./request/path";
export { derivedRoute, FLAGGED_WORDS, routeProblem } from "./request/route";
export { createClientLimiter } from "./request/client-limiter.server";
export { projectOf, upstreamUrlFor, type ProjectIdentity } from "./upstream/ingest.server";
export type { OwnProject } from "./upstream/ingest.server";
export { parseDsn, type Dsn } from "./upstream/dsn.server";
export { createSpool, type SpooledEnvelope } from "./spool/store.server";
export { createSpoolConsumer } from "./spool/consumer.server";
export { DEAD_LETTER_QUEUE } from "./spool/dead-letters.server";
export type { SpoolStats } from "./spool/stats.server";
export { createClientReports, type ClientReports } from "./upstream/client-reports.server";
export { SentryLimits } from "./upstream/sentry-limits.server";
