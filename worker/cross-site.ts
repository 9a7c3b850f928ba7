/** Methods that change nothing, which any site may make a browser send. */
const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A request that would change state, made by another site's page: a foreign or unreadable
 * `Origin` (`null` included), or `Sec-Fetch-Site: cross-site`. Answered 403 here, before Remix,
 * whose CSRF check would throw for a document request (and the SDK report it, once per request)
 * and not look at a data request (`?_data=`) at all. A client that sends neither header, as
 * `curl` does, is not a browser another site can drive.
 */
export function crossSiteRefusal(request: Request): Response | undefined {
  if (SAFE_METHODS.has(request.method)) return undefined;
  const origin = request.headers.get("origin");
  const foreign = (origin !== null && origin !== new URL(request.url).origin) || request.headers.get("sec-fetch-site") === "cross-site";
  if (!foreign) return undefined;
  return new Response("Another site's page may not change anything here.\n", {
    status: 403,
    headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "private, no-store" },
  });
}
