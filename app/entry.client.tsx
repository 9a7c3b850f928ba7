import { RemixBrowser } from "@remix-run/react";
import { StrictMode } from "react";
import { hydrateRoot } from "react-dom/client";

// Not inside startTransition: React 18 can then interrupt hydration for a key press, and a Tab
// pressed while the page is still hydrating ended in React error #345 ("Root did not complete").
hydrateRoot(
  document,
  <StrictMode>
    <RemixBrowser />
  </StrictMode>,
);
