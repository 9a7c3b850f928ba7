import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

const network = vi.fn(async (input: RequestInfo | URL) => new Response(`from the network: ${String(input)}`, { status: String(input).includes("missing") ? 404 : 200 }));

describe("Spotlight's source cache", () => {
  beforeAll(async () => {
    vi.stubGlobal("fetch", network);
    // It wraps the fetch it finds when it loads, as in Spotlight's process.
    await import(new URL("spotlight-source-cache.ts", import.meta.url).href);
  });
  afterAll(() => vi.unstubAllGlobals());

  it("fetches a content-named build file from the app once, however many frames ask", async () => {
    const url = "http://localhost:8787/build/_shared/chunk-R7F4NTQ4.js";
    const texts = [];
    for (let frame = 0; frame < 40; frame += 1) texts.push(await (await fetch(url)).text());
    expect(new Set(texts)).toEqual(new Set([`from the network: ${url}`]));
    expect(network.mock.calls.filter(([input]) => String(input) === url)).toHaveLength(1);
  });

  it.each([
    ["another host", "https://example.com/build/chunk-R7F4NTQ4.js"],
    ["a file not named by its content", "http://localhost:8787/build/manifest.js"],
    ["a page", "http://127.0.0.1:8787/sentry-example-page"],
  ])("leaves %s to the network every time", async (_, url) => {
    await fetch(url);
    await fetch(url);
    expect(network.mock.calls.filter(([input]) => String(input) === url)).toHaveLength(2);
  });

  it("keeps no failed answer", async () => {
    const url = "http://localhost:8787/build/missing-AAAAAAAA.js";
    expect((await fetch(url)).status).toBe(404);
    expect((await fetch(url)).status).toBe(404);
    expect(network.mock.calls.filter(([input]) => String(input) === url)).toHaveLength(2);
  });
});
