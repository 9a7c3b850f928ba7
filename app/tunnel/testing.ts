/**
 * What tests and benchmarks need of the tunnel beyond its public surface (`index.ts`): the parts as
 * `createTunnelWorker` builds them, the stages, and the streaming core, for the unit tests that run
 * in workerd and for `npm run bench:ablation`. Not for production code: a Worker uses `index.ts`.
 */
export { buildTunnelParts } from "./worker.server";
export { TUNNEL_ANSWERS, type TunnelAnswerCode } from "./answers.server";
export { admit } from "./admit.server";
export { receiveEnvelope, type ReceivedEnvelope } from "./receive.server";
export { deliver } from "./deliver.server";
export { NO_FACTS, recordRequest } from "./log-line.server";
export { Deadline } from "./shared/deadline.server";
export { forwardEnvelope } from "./upstream/forward.server";
export { upstreamRequestHeaders } from "./upstream/header-policy.server";
export type { SpooledEnvelope } from "./spool/store.server";
