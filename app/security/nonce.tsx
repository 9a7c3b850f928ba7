import { createContext, useContext } from "react";

const NonceContext = createContext<string | undefined>(undefined);

/** Set around `<RemixServer>`: the Content-Security-Policy nonce of the response being rendered. */
export const NonceProvider = NonceContext.Provider;

/**
 * The nonce for inline scripts. In the browser it is `undefined`: browsers hide a nonce from the
 * DOM once the page has loaded, and scripts added after hydration are files, not inline.
 */
export function useNonce(): string | undefined {
  return useContext(NonceContext);
}
