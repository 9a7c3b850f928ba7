import type { ServerBuild } from "@remix-run/cloudflare";

/**
 * Every path the app's router declares, each joined to its parents' (`/sentry-example-page`,
 * `/:id`, `/*`): what a tunnel route must not shadow.
 */
export function pagePathsOf(routes: ServerBuild["routes"]): string[] {
  const pathOf = (id: string | undefined): string => {
    const route = id === undefined ? undefined : routes[id];
    if (!route) return "";
    const parent = pathOf(route.parentId);
    return route.path ? `${parent}/${route.path}` : parent;
  };
  return [...new Set(Object.keys(routes).map((id) => pathOf(id) || "/"))];
}
