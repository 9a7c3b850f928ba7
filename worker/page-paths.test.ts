import type { ServerBuild } from "@remix-run/cloudflare";
import { describe, expect, it } from "vitest";

import { pagePathsOf } from "./page-paths";

describe("pagePathsOf", () => {
  it("joins each route's path to its parents', as the router matches them", () => {
    const routes = {
      root: { id: "root", path: "" },
      "routes/_index": { id: "routes/_index", parentId: "root", index: true },
      "routes/shop": { id: "routes/shop", parentId: "root", path: "shop" },
      "routes/shop.$item": { id: "routes/shop.$item", parentId: "routes/shop", path: ":item" },
      "routes/$": { id: "routes/$", parentId: "root", path: "*" },
    } as unknown as ServerBuild["routes"];
    expect(pagePathsOf(routes).sort()).toEqual(["/", "/*", "/shop", "/shop/:item"]);
  });
});
