import type { AppLoadContext, EntryContext } from "@remix-run/cloudflare";
import { RemixServer } from "@remix-run/react";
import { sentryHandleError } from "@sentry/remix/cloudflare";
import { isbot } from "isbot";
import { renderToReadableStream } from "react-dom/server";

/** Deferred data still pending after this is rejected, so a stalled render cannot hold the connection. */
const ABORT_DELAY_MS = 5_000;

/** Errors from loaders, actions and rendering go to Sentry; thrown Responses (404s, redirects) do not. */
export const handleError = sentryHandleError;

export default async function handleRequest(
  request: Request,
  responseStatusCode: number,
  responseHeaders: Headers,
  remixContext: EntryContext,
  _loadContext: AppLoadContext,
) {
  let status = responseStatusCode;
  const body = await renderToReadableStream(
    <RemixServer context={remixContext} url={request.url} abortDelay={ABORT_DELAY_MS} />,
    {
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

  responseHeaders.set("Content-Type", "text/html; charset=utf-8");
  return new Response(body, { headers: responseHeaders, status });
}
