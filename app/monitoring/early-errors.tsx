/** One uncaught error or rejection, as the page's first script saw it before the SDK was there. */
export interface EarlyError {
  error: unknown;
  /** When it happened, in seconds since the epoch, as Sentry's timestamps are. */
  at: number;
  rejection: boolean;
}

/** What the stub hands the SDK: the errors it kept, and how many it let go past {@link MAX_EARLY_ERRORS}. */
export interface EarlyErrors {
  errors: EarlyError[];
  dropped: number;
}

/**
 * The most the stub keeps. The SDK sends them all the moment it starts, one envelope each: 30 is
 * half the tunnel's per-client share (60 per 10 s), so that a page's early errors never spend its
 * visitor's share alone and the pageload, session and logs still go, and it is below the SDK's
 * transport buffer (64). More would be refused by the tunnel and lost anyway. Without a bound, a
 * page whose SDK never loads (offline, a blocker, a deploy that replaced the chunk, no DSN) kept
 * every error, with its Error object, for the life of the page.
 */
const MAX_EARLY_ERRORS = 30;

declare global {
  interface Window {
    /** Set by the stub: stops it and hands over what it recorded. */
    __takeEarlyErrors?: () => EarlyErrors;
    /** Set by the entry: the stub calls it at each error, so that the SDK loads then if not yet. */
    __monitoringWanted?: () => void;
    /** Set by the stub: an error came before the entry was there to be told. */
    __earlyErrorSeen?: boolean;
  }
}

/**
 * The page's first script, some 450 bytes inline: the Loader pattern on our own origin. It records
 * every uncaught error and rejection from the first moment, with the error object (its stack) and
 * its time, up to {@link MAX_EARLY_ERRORS}, until the SDK, loaded after hydration, takes them over
 * (`app/monitoring/sdk.client.ts`), with the count of those it let go.
 */
const STUB = `(function(w){var q=[],n=0;function on(e){var r=e.type!=="error";if(q.length<${MAX_EARLY_ERRORS})q.push({error:r?e.reason:e.error||e.message,at:Date.now()/1e3,rejection:r});else n++;w.__earlyErrorSeen=true;if(w.__monitoringWanted)w.__monitoringWanted()}w.addEventListener("error",on);w.addEventListener("unhandledrejection",on);w.__takeEarlyErrors=function(){w.removeEventListener("error",on);w.removeEventListener("unhandledrejection",on);return{errors:q,dropped:n}}})(window)`;

export function EarlyErrorsScript({ nonce }: { nonce: string | undefined }) {
  // The browser hides a nonce once the page has loaded, so hydration finds none: expected.
  return <script nonce={nonce} suppressHydrationWarning dangerouslySetInnerHTML={{ __html: STUB }} />;
}
