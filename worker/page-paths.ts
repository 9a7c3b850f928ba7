/** A route as the build and Remix's route config both declare it: all a page's path is made of. */
interface DeclaredRoute {
  path?: string;
  parentId?: string;
}

/**
 * Every path the app's router declares, each joined to its parents' (`/sentry-example-page`,
 * `/:id`, `/*`): what a tunnel route must not shadow. From the build's routes in the Worker, and
 * from Remix's route config before anything is built (`npm start`'s check of the variables).
 */
export function pagePathsOf(routes: Readonly<Record<string, DeclaredRoute | undefined>>): string[] {
  const pathOf = (id: string | undefined): string => {
    const route = id === undefined ? undefined : routes[id];
    if (!route) return "";
    const parent = pathOf(route.parentId);
    return route.path ? `${parent}/${route.path}` : parent;
  };
  return [...new Set(Object.keys(routes).map((id) => pathOf(id) || "/"))];
}
