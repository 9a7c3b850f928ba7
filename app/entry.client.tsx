import { RemixBrowser } from "@remix-run/react";
import { StrictMode } from "react";
import { hydrateRoot } from "react-dom/client";

import { loadSentry } from "./monitoring/load-sentry";

// The SDK comes after hydration and load (the root component asks for it), or at the first error if
// that is sooner; until then the inline stub in the page's head records errors (`monitoring/early-errors`).
window.__monitoringWanted = () => void loadSentry();
if (window.__earlyErrorSeen) void loadSentry();

// Not inside startTransition: React 18 can then interrupt hydration for a key press, and a Tab
// pressed while the page is still hydrating ended in React error #345 ("Root did not complete").
hydrateRoot(
  document,
  <StrictMode>
    <RemixBrowser />
  </StrictMode>,
);
