import { lastEventId } from "@sentry/core";
import { captureRemixErrorBoundaryError } from "@sentry/remix";
import { useEffect, useState } from "react";

const ELEMENT_ID = "error-reference";

/** Remix hides server errors' messages from the browser behind this one. */
function isServerError(error: unknown): boolean {
  return error instanceof Error && error.message === "Unexpected Server Error";
}

/**
 * The Sentry event id of the error on screen, for the user to quote. A server error was reported
 * by the Worker while it rendered this page: its id comes from the server's markup. An error in
 * the browser is reported here, once.
 */
function useErrorReference(error: unknown): string | undefined {
  const [serverReference] = useState(() =>
    typeof document === "undefined" ? lastEventId() : document.getElementById(ELEMENT_ID)?.dataset.eventId,
  );
  const [clientReference, setClientReference] = useState<string>();
  useEffect(() => {
    if (serverReference || isServerError(error)) return;
    setClientReference(captureRemixErrorBoundaryError(error));
  }, [error, serverReference]);
  return serverReference ?? clientReference;
}

export function ErrorReference({ error }: { error: unknown }) {
  const reference = useErrorReference(error);
  if (!reference) return null;
  return (
    <p id={ELEMENT_ID} data-event-id={reference}>
      If you contact us about this, quote the reference <code>{reference}</code>.
    </p>
  );
}
