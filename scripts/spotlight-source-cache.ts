// Loaded into Spotlight's process by `npm start` and `npm run dev` (NODE_OPTIONS=--import).
//
// Before Spotlight's UI lists a browser error, its sidecar fetches the script behind every frame of
// the stack, one frame after another and without a cache (`PUT /contextlines`): some forty fetches
// of the same few chunks, up to 265 KB each, through wrangler dev's proxy. That took 0.3 to 1.1 s
// per error here, and most of the listing's time. The app's `/build/` files are named by their
// content, so a copy kept in memory is always current; any other request passes untouched.
const MAX_CACHED_FILES = 200;
const cached = new Map<string, ArrayBuffer>();
const fetchFromNetwork = globalThis.fetch;

globalThis.fetch = async function fetchBuildFilesOnce(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : undefined;
  if (url === undefined || (init?.method ?? "GET") !== "GET" || !isContentNamed(url)) return fetchFromNetwork(input, init);
  let body = cached.get(url);
  if (body === undefined) {
    const answer = await fetchFromNetwork(input, init);
    if (!answer.ok) return answer;
    body = await answer.arrayBuffer();
    if (cached.size >= MAX_CACHED_FILES) cached.delete(cached.keys().next().value!);
    cached.set(url, body);
  }
  return new Response(body.slice(0), { status: 200, headers: { "content-type": "text/javascript" } });
};

/** A Remix build file, named by its content, on a loopback origin: `/build/…-<HASH>.js`. */
function isContentNamed(url: string): boolean {
  try {
    const { hostname, pathname } = new URL(url);
    return ["localhost", "127.0.0.1", "[::1]"].includes(hostname) && /^\/build\/.+-[A-Z0-9]{8}\.js$/.test(pathname);
  } catch {
    return false;
  }
}
