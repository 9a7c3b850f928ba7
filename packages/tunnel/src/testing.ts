/**
 * `@edge-monitoring/tunnel/testing`: the harness for tests of a Worker that runs the tunnel, the
 * package's own among them (`harness.ts`). Sentry as a stub `fetch` (no socket is opened),
 * envelopes as an SDK writes them, the tunnel around that stub, every answer with its reason
 * code, and a bounded wait. It runs in Node and in workerd; nothing here is for production code.
 */
export {
  configRefusal,
  envelope,
  eventually,
  EVERY_CLIENT,
  headerOf,
  StubSentry,
  TEST_DSN,
  TUNNEL_ANSWERS,
  tunnelUnderTest,
  type TunnelAnswerCode,
} from "./testing/harness.ts";
