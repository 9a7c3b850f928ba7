/**
 * How a list is named wherever the watch writes: its line, Sentry's messages and fingerprints. A
 * list's address may carry a credential (a private list's `?token=`, or a token as a path
 * segment), and none of those places is secret: the query and every segment that looks like a
 * token are left out, the host and the file's name kept.
 */
export function listName(url: string): string {
  const { origin, pathname, search } = new URL(url);
  const path = pathname
    .split("/")
    .map((segment) => (looksLikeToken(segment) ? "…" : segment))
    .join("/");
  return `${origin}${path}${search === "" ? "" : "?…"}`;
}

/** `text` (a runtime's error message, which may quote the address) with what {@link listName} leaves out removed. */
export function withoutSecrets(text: string, url: string): string {
  const { search, pathname } = new URL(url);
  const secrets = [search.slice(1), ...pathname.split("/").filter(looksLikeToken)].filter((secret) => secret !== "");
  return secrets.reduce((said, secret) => said.replaceAll(secret, "…"), text.replaceAll(url, listName(url)));
}

/**
 * A run of 24 letters and digits, or of 12 with a digit among them: API keys, hashes and UUIDs
 * are; `easyprivacy.txt`, `uAssets` and `filters-2024.txt` are not.
 */
function looksLikeToken(segment: string): boolean {
  return (segment.match(/[A-Za-z0-9_]{12,}/g) ?? []).some((run) => run.length >= 24 || /\d/.test(run));
}
