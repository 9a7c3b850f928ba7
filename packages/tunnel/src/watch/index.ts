/**
 * `@edge-monitoring/tunnel/watch`: the ad-block list watch, for a Worker's `scheduled()`. It needs
 * `@ghostery/adblocker`, an optional peer that a Worker which does not import this never loads.
 */
export { readWatchSettings, DEFAULT_WATCH_LISTS, type WatchSettings, type WatchVariables } from "./settings.ts";
export { watchBlockLists, watchedRequestsOf, MAX_BLOCKS_SAID, type WatchLine, type WatchedList, type BlockLine, type WatchOptions, type WatchLimits } from "./watch.ts";
export { watchMessages, type WatchMessage } from "./messages.ts";
export { memoryListStore, r2ListStore, type ListStore } from "./store.ts";
export type { StoredList, ListFailure } from "./list-read.ts";
export type { WatchedRequest } from "./verdicts.ts";
