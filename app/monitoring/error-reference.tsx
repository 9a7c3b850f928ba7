import { createContext, useContext, useEffect, useState } from "react";

import { loadSentry } from "./load-sentry";

const ELEMENT_ID = "error-reference";

/**
 * The Worker's SDK's last event id, while the server renders: given by `entry.server.tsx`, so that
 * no Sentry code comes into the browser's bundle with this component.
 */
export const ServerEventId = createContext<() => string | undefined>(() => undefined);

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
  const serverEventId = useContext(ServerEventId);
  const [serverReference] = useState(() =>
    typeof document === "undefined" ? serverEventId() : document.getElementById(ELEMENT_ID)?.dataset.eventId,
  );
  const [clientReference, setClientReference] = useState<string>();
  useEffect(() => {
    if (serverReference || isServerError(error)) return;
    let current = true;
    void loadSentry()
      .then((sentry) => sentry?.referenceFor(error))
      .then((reference) => current && setClientReference(reference));
    return () => {
      current = false;
    };
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
