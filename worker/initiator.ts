/** The `Sec-Fetch-Site` values of a request the visitor's own page or address bar made. */
const VISITORS_OWN = new Set(["same-origin", "none"]);

/**
 * Whether another site's page made the browser send this request, rather than the visitor: an
 * `<img>`, `<script>`, `<iframe>` or fetch of one of our pages from another site (`Sec-Fetch-Site`
 * other than `same-origin` or `none`). A top-level navigation is the visitor's own, wherever its
 * link was (a search result, another site's link): a page cannot repeat one without leaving. A
 * client that sends no `Sec-Fetch-Site` (curl, an older browser) is no page another site drives.
 */
export function madeByAnotherSite(headers: Readonly<Record<string, string | undefined>>): boolean {
  const site = headers["sec-fetch-site"];
  if (site === undefined || VISITORS_OWN.has(site)) return false;
  return headers["sec-fetch-mode"] !== "navigate" || headers["sec-fetch-dest"] !== "document";
}
