/** One uncaught error or rejection, as the page's first script saw it before the SDK was there. */
export interface EarlyError {
  error: unknown;
  /** When it happened, in seconds since the epoch, as Sentry's timestamps are. */
  at: number;
  rejection: boolean;
}

declare global {
  interface Window {
    /** Set by the stub: stops it and hands over what it recorded. */
    __takeEarlyErrors?: () => EarlyError[];
    /** Set by the entry: the stub calls it at each error, so that the SDK loads then if not yet. */
    __monitoringWanted?: () => void;
    /** Set by the stub: an error came before the entry was there to be told. */
    __earlyErrorSeen?: boolean;
  }
}

/**
 * The page's first script, some 400 bytes inline: the Loader pattern on our own origin. It records
 * every uncaught error and rejection from the first moment, with the error object (its stack) and
 * its time, until the SDK, loaded after hydration, takes them over (`app/monitoring/sdk.client.ts`).
 */
const STUB = `(function(w){var q=[];function on(e){var r=e.type!=="error";q.push({error:r?e.reason:e.error||e.message,at:Date.now()/1e3,rejection:r});w.__earlyErrorSeen=true;if(w.__monitoringWanted)w.__monitoringWanted()}w.addEventListener("error",on);w.addEventListener("unhandledrejection",on);w.__takeEarlyErrors=function(){w.removeEventListener("error",on);w.removeEventListener("unhandledrejection",on);return q}})(window)`;

export function EarlyErrorsScript({ nonce }: { nonce: string | undefined }) {
  // The browser hides a nonce once the page has loaded, so hydration finds none: expected.
  return <script nonce={nonce} suppressHydrationWarning dangerouslySetInnerHTML={{ __html: STUB }} />;
}
