/** A route as the build and Remix's route config both declare it: all a page's path is made of. */
interface DeclaredRoute {
  path?: string;
  parentId?: string;
}

/** What Remix's build and its config both say of the app's paths. */
interface DeclaredApp {
  routes: Readonly<Record<string, DeclaredRoute | undefined>>;
  /** Where the scripts are served (`publicPath`, `/build/`). */
  publicPath: string;
}

/**
 * The route module that declares the tunnel's original route among the app's routes
 * (`app/routes/monitoring.ts`): the tunnel's, not a page of the app's.
 */
const TUNNEL_ROUTE_ID = "routes/monitoring";

/**
 * Every path the app serves itself: each page its router declares, joined to its parents'
 * (`/sentry-example-page`, `/:id`, `/*`), and everything under its scripts' path (`/build/*`).
 * The tunnel is told these, as it reserves nothing itself, so that no route of it shadows one.
 * From the build in the Worker, and from Remix's config before anything is built (`npm start`'s
 * check of the variables).
 */
export function appPathsOf({ routes, publicPath }: DeclaredApp): string[] {
  const pathOf = (id: string | undefined): string => {
    const route = id === undefined ? undefined : routes[id];
    if (!route) return "";
    const parent = pathOf(route.parentId);
    return route.path ? `${parent}/${route.path}` : parent;
  };
  const scripts = `${publicPath.replace(/\/+$/, "")}/*`;
  const pages = Object.keys(routes).filter((id) => id !== TUNNEL_ROUTE_ID);
  return [...new Set(pages.map((id) => pathOf(id) || "/")), scripts];
}
