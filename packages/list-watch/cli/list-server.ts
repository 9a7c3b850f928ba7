// A filter-list server on loopback, as the lists' own servers answer: each list at /<name>, with an
// ETag and a 304 for a request that names it. `npm run lists` runs it for `npm start`; the Worker
// tests run it to watch the lists through the Worker's Cron Trigger.
import { createHash } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A list's text, or how the server answers for it instead (a failure, a page that is no list). */
export type ListAnswer = string | ((response: ServerResponse) => void);

export interface ListServer {
  /** Each list's address, in the order given: TUNNEL_WATCH_LISTS's value, joined with commas. */
  urls: string[];
  /** Replaces what a list's address answers. */
  set(name: string, answer: ListAnswer): void;
  /** Requests answered so far, with the `If-None-Match` each carried. */
  asked: { path: string; ifNoneMatch: string | undefined }[];
  stop(): Promise<void>;
}

export async function startListServer(lists: Record<string, ListAnswer>, port = 0): Promise<ListServer> {
  const answers = new Map(Object.entries(lists));
  const asked: ListServer["asked"] = [];
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://lists").pathname;
    const ifNoneMatch = request.headers["if-none-match"];
    asked.push({ path, ifNoneMatch });
    const answer = answers.get(path.slice(1));
    if (answer === undefined) return void response.writeHead(404).end("no such list");
    if (typeof answer === "function") return answer(response);
    const etag = `"${createHash("sha256").update(answer).digest("hex").slice(0, 16)}"`;
    if (ifNoneMatch === etag) return void response.writeHead(304, { etag }).end();
    response.writeHead(200, { "content-type": "text/plain; charset=utf-8", etag }).end(answer);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    urls: [...answers.keys()].map((name) => `${origin}/${name}`),
    set: (name, answer) => void answers.set(name, answer),
    asked,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
