import type { AppLoadContext, EntryContext, HandleDataRequestFunction } from "@remix-run/cloudflare";
import { RemixServer } from "@remix-run/react";
import { lastEventId } from "@sentry/core";
import { sentryHandleError } from "@sentry/remix/cloudflare";
import { isbot } from "isbot";
import { renderToReadableStream } from "react-dom/server";

import { ServerEventId } from "./monitoring/error-reference";
import { NonceProvider } from "./security/nonce";
import { newNonce, pageSecurityHeaders } from "./security/page-security.server";

/** Pages and their data: for this visitor, and for now. */
const PRIVATE = "private, no-store";

/** Deferred data still pending after this is rejected, so a stalled render cannot hold the connection. */
const ABORT_DELAY_MS = 5_000;

/** Errors from loaders, actions and rendering go to Sentry; thrown Responses (404s, redirects) do not. */
export const handleError = sentryHandleError;

/** Every HTML answer, the 404 and 500 pages included, comes through here. */
export default async function handleRequest(
  request: Request,
  responseStatusCode: number,
  responseHeaders: Headers,
  remixContext: EntryContext,
  loadContext: AppLoadContext,
) {
  const nonce = newNonce();
  let status = responseStatusCode;
  const body = await renderToReadableStream(
    <NonceProvider value={nonce}>
      <ServerEventId.Provider value={lastEventId}>
        <RemixServer context={remixContext} url={request.url} abortDelay={ABORT_DELAY_MS} nonce={nonce} />
      </ServerEventId.Provider>
    </NonceProvider>,
    {
      nonce,
      signal: AbortSignal.timeout(ABORT_DELAY_MS + 1_000),
      onError(error: unknown) {
        // Errors after the shell has been sent cannot change the status; log them for the operator.
        status = 500;
        console.error(error);
      },
    },
  );

  // Crawlers get the whole page at once; people get it streamed.
  if (isbot(request.headers.get("user-agent") ?? "")) {
    await body.allReady;
  }

  // Violations are reported through the tunnel to the app's own project, when there is one.
  const { config } = loadContext;
  const reportPath = loadContext.tunnel.cspReportPath;
  const reportUrl = reportPath ? new URL(reportPath, request.url).href : undefined;
  const security = pageSecurityHeaders(nonce, reportUrl, config.connectOrigins, { development: config.sentry.environment === "development" });
  for (const [name, value] of Object.entries(security)) responseHeaders.set(name, value);
  responseHeaders.set("Content-Type", "text/html; charset=utf-8");
  // Each page carries this response's nonce and the visitor's own trace: no shared cache may keep it.
  responseHeaders.set("Cache-Control", PRIVATE);
  return new Response(body, { headers: responseHeaders, status });
}

/** Loader and action data as JSON: never sniffed as anything else. */
export const handleDataRequest: HandleDataRequestFunction = (response) => {
  response.headers.set("X-Content-Type-Options", "nosniff");
  response.headers.set("Cache-Control", PRIVATE);
  return response;
};
