import { describe, expect, it } from "vitest";

import { madeByAnotherSite } from "./initiator";

/** The fetch metadata Chromium sends for each, as seen on the wire. */
const sent = (site: string, mode: string, dest: string) => ({ "sec-fetch-site": site, "sec-fetch-mode": mode, "sec-fetch-dest": dest });

describe("madeByAnotherSite", () => {
  it.each([
    ["another site's <img>", sent("cross-site", "no-cors", "image")],
    ["another site's <iframe>", sent("cross-site", "navigate", "iframe")],
    ["another site's no-cors fetch", sent("cross-site", "no-cors", "empty")],
    ["another site's <script>", sent("cross-site", "no-cors", "script")],
    ["a sibling subdomain's <img>", sent("same-site", "no-cors", "image")],
  ])("says so of %s", (_, headers) => {
    expect(madeByAnotherSite(headers)).toBe(true);
  });

  it.each([
    ["the address bar", sent("none", "navigate", "document")],
    ["a link on another site, followed", sent("cross-site", "navigate", "document")],
    ["the page's own data request", sent("same-origin", "cors", "empty")],
    ["the page's own <img>", sent("same-origin", "no-cors", "image")],
    ["a client that sends no fetch metadata", {}],
  ])("takes %s as the visitor's own", (_, headers) => {
    expect(madeByAnotherSite(headers)).toBe(false);
  });
});
