import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { createServer } from "node:net";
import { Readable } from "node:stream";

/**
 * `fetch` over a fresh connection each time. A server that answers before reading the body (as the
 * tunnel does when it refuses a request) may close the connection while the client still writes;
 * undici then sometimes reports "other side closed" instead of the answer it already has.
 */
export function fetchOnce(url: URL, init: RequestInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const request = httpRequest(url, { method: init.method ?? "GET", headers: headersOf(init.headers), agent: false });
    request.on("response", (incoming) => {
      answered = true;
      const status = incoming.statusCode ?? 0;
      const body = status === 204 || status === 304 ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array<ArrayBuffer>>);
      resolve(new Response(body, { status, headers: toHeaders(incoming.headers) }));
    });
    request.on("error", (error) => {
      if (!answered) reject(error);
    });
    const { body } = init;
    if (body instanceof ReadableStream) {
      Readable.fromWeb(body as import("node:stream/web").ReadableStream).on("error", () => request.destroy()).pipe(request);
    } else if (body instanceof Uint8Array || typeof body === "string") {
      request.end(body);
    } else if (body instanceof URLSearchParams) {
      request.setHeader("content-type", "application/x-www-form-urlencoded;charset=UTF-8");
      request.end(body.toString());
    } else if (body === undefined || body === null) {
      request.end();
    } else {
      reject(new TypeError("fetchOnce takes a string, bytes, form parameters or a stream as its body"));
    }
  });
}

/** An answer to a request whose body never ended, and how long it took to come. */
interface StalledAnswer {
  status: number;
  headers: Headers;
  body: Buffer;
  elapsedMs: number;
}

/**
 * Sends the request line, `headers` and `first`, then nothing more: the body never ends. Resolves
 * with the whole answer, then drops the connection, whose body is still unsent.
 */
export function stalledUpload(url: URL, first: Uint8Array, headers: Record<string, string> = {}): Promise<StalledAnswer> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: "POST", headers, agent: false });
    request.on("error", reject);
    request.on("response", (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
      incoming.on("end", () => {
        request.destroy();
        resolve({ status: incoming.statusCode ?? 0, headers: toHeaders(incoming.headers), body: Buffer.concat(chunks), elapsedMs: Date.now() - started });
      });
    });
    if (first.byteLength > 0) request.write(first);
    else request.flushHeaders();
  });
}

function headersOf(init: HeadersInit | undefined): Record<string, string> {
  return Object.fromEntries(new Headers(init));
}

function toHeaders(incoming: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, item);
  }
  return headers;
}

/** A loopback port nothing listens on at the moment it is asked. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
