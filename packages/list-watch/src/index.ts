/**
 * `@edge-monitoring/list-watch`: the ad-block list watch, for a Worker's `scheduled()`. It asks
 * Ghostery's engine (which runs in workerd) whether the lists block what the tunnel's pages post
 * to (from the tunnel's `describe()`) and the scripts they load. `npm run check:blockers`, with
 * uBlock Origin's own engine beside it in `cli/`, is the authoritative check.
 */
export { readWatchSettings, type WatchSettings, type WatchVariables } from "./settings.ts";
export { watchBlockLists, watchedRequestsOf, type WatchLine } from "./watch.ts";
export { watchMessages } from "./messages.ts";
export { memoryListStore, r2ListStore, type ListStore } from "./store.ts";
export { scriptsReachable } from "./scripts-reachable.ts";
export type { WatchedRequest } from "./verdicts.ts";
