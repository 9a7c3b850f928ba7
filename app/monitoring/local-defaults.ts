// What `npm start` and `npm run dev` give the app locally, and where the app sends a developer.

/**
 * The DSN they give the app when the developer has set none: of the SaaS shape, for project 0 of
 * organisation 0, which reaches nobody; with `TUNNEL_UPSTREAM_ORIGIN` set, what is sent to it lands
 * in Spotlight. The home page says so when it sees it.
 */
export const PLACEHOLDER_DSN = "https://localdev@o0.ingest.sentry.io/0";

/** Where Spotlight's UI lists errors: its root opens on traces, where a self-test's error is not. */
export const SPOTLIGHT_ERRORS_PATH = "/telemetry/errors";
