import { createServer, type Server } from "node:net";
import { expect, it, vi } from "vitest";

/**
 * The browser tests' `wrangler dev` on a port another process takes between `freePort()` and
 * workerd's bind, as an outgoing connection did under load: one browser file's every test was
 * skipped for it. The first port asked for here is one this test holds.
 */
let held: number | undefined;
let calls = 0;
vi.mock("./http", async (original) => {
  const actual = await original<typeof import("./http")>();
  return { ...actual, freePort: async () => (++calls === 1 && held !== undefined ? held : actual.freePort()) };
});

it("starts wrangler dev again on other ports when the port it was given is taken", async () => {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  held = (server.address() as { port: number }).port;
  const { startWranglerDev } = await import("./wrangler-dev");
  const dev = await startWranglerDev();
  try {
    expect(dev.origin).not.toContain(`:${held}`);
    expect(calls).toBeGreaterThan(2);
  } finally {
    await dev.stop();
    server.close();
  }
}, 180_000);
