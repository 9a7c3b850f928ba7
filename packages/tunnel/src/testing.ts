/**
 * `@edge-monitoring/tunnel/testing`: what tests and measurements need beyond the entry: every
 * answer and its reason code, the parts as `createTunnelWorker` builds them, the stages, and the
 * streaming core, for tests that run them in workerd and for timing the stages one by one. Not for
 * production code: a Worker uses the entry.
 */
export { buildTunnelParts } from "./worker.ts";
export { TUNNEL_ANSWERS, type TunnelAnswerCode } from "./answers.ts";
export { admit } from "./admit.ts";
export { receiveEnvelope, type ReceivedEnvelope } from "./receive.ts";
export { deliver } from "./deliver.ts";
export { NO_FACTS, recordRequest } from "./log-line.ts";
export { Deadline } from "./shared/deadline.ts";
export { forwardEnvelope } from "./upstream/forward.ts";
export { upstreamRequestHeaders } from "./upstream/header-policy.ts";
export type { SpooledEnvelope } from "./spool/store.ts";
export type { BodyChunk } from "./shared/body.ts";
