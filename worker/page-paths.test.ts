import type { ServerBuild } from "@remix-run/cloudflare";
import { describe, expect, it } from "vitest";

import { appPathsOf } from "./page-paths";

describe("appPathsOf", () => {
  it("joins each route's path to its parents', as the router matches them, and adds everything under the scripts' path", () => {
    const routes = {
      root: { id: "root", path: "" },
      "routes/_index": { id: "routes/_index", parentId: "root", index: true },
      "routes/shop": { id: "routes/shop", parentId: "root", path: "shop" },
      "routes/shop.$item": { id: "routes/shop.$item", parentId: "routes/shop", path: ":item" },
      "routes/$": { id: "routes/$", parentId: "root", path: "*" },
      // The tunnel's declared home, not a page: the tunnel would refuse a host that declared it.
      "routes/monitoring": { id: "routes/monitoring", parentId: "root", path: "monitoring" },
    } as unknown as ServerBuild["routes"];
    expect(appPathsOf({ routes, publicPath: "/build/" }).sort()).toEqual(["/", "/*", "/build/*", "/shop", "/shop/:item"]);
  });
});
