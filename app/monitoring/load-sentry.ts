import { readMonitoringSettings } from "./settings-script";

type SentryChunk = typeof import("./sdk.client");

let loading: Promise<SentryChunk | undefined> | undefined;
let loaded: SentryChunk | undefined;

/**
 * The SDK's chunk, loaded and started once, whoever asks first: the root after hydration and load
 * (`loadSentryAfterLoad`), or the stub at the first error. `undefined` when the page has no
 * monitoring settings (no DSN).
 */
export function loadSentry(): Promise<SentryChunk | undefined> {
  loading ??= (async () => {
    const settings = readMonitoringSettings();
    if (!settings) return undefined;
    const sentry = await import("./sdk.client");
    sentry.startSentry(settings, window.__takeEarlyErrors?.() ?? { errors: [], dropped: 0 });
    loaded = sentry;
    // For whoever waits on monitoring: the tests, a developer in the console.
    document.documentElement.dataset.monitoring = "started";
    return sentry;
  })();
  return loading;
}

/** Once the page has loaded, so that the SDK's chunk never competes with what the page needs first, and `load` waits for nothing of it. */
export function loadSentryAfterLoad(): Promise<SentryChunk | undefined> {
  if (document.readyState === "complete") return loadSentry();
  return new Promise((resolve) => window.addEventListener("load", () => resolve(loadSentry()), { once: true }));
}

/** The SDK if it has started: what an event handler, which runs after hydration, may use at once. */
export function startedSentry(): SentryChunk | undefined {
  return loaded;
}
