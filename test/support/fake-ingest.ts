import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { eventually } from "@edge-monitoring/tunnel/testing";

/** One request that reached the ingest with its whole body. */
export interface Delivery {
  method: string;
  /** Path and query, as the tunnel asked for them. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** What the ingest does with a request; the default answers 200 `{"id":…}` as Sentry does. */
export type IngestBehaviour = (request: IncomingMessage, response: ServerResponse, body: Buffer) => void;

/**
 * A stand-in for Sentry's ingest on loopback. Only requests whose body arrived whole count as
 * deliveries, so a test can tell "nothing partial reached Sentry" from "nothing reached Sentry".
 */
export class FakeIngest {
  readonly deliveries: Delivery[] = [];
  /** Requests whose body never completed (the sender gave up or was cut off). */
  unfinished = 0;
  /** Requests that arrived at all, complete or not. */
  arrivals = 0;
  /** Requests still arriving since the last reset: their body has neither ended nor been cut off. */
  private readonly receiving = new Set<IncomingMessage>();
  private behaviour: IngestBehaviour = answerOk;
  private readonly server = createServer((request, response) => this.receive(request, response));

  static async start(): Promise<FakeIngest> {
    const ingest = new FakeIngest();
    await new Promise<void>((resolve) => ingest.server.listen(0, "127.0.0.1", resolve));
    return ingest;
  }

  get origin(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Waits until no request is still arriving, so that every delivery there will be is in. */
  settled(timeoutMs = 5_000): Promise<void> {
    return eventually(() => this.receiving.size === 0, timeoutMs);
  }

  respondWith(behaviour: IngestBehaviour): void {
    this.behaviour = behaviour;
  }

  reset(): void {
    this.deliveries.length = 0;
    this.unfinished = 0;
    this.arrivals = 0;
    this.receiving.clear();
    this.behaviour = answerOk;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private receive(request: IncomingMessage, response: ServerResponse): void {
    this.arrivals += 1;
    this.receiving.add(request);
    const chunks: Buffer[] = [];
    let complete = false;
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      complete = true;
      this.receiving.delete(request);
      const body = Buffer.concat(chunks);
      this.deliveries.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body });
      this.behaviour(request, response, body);
    });
    request.on("close", () => {
      if (complete) return;
      this.unfinished += 1;
      this.receiving.delete(request);
    });
  }
}

export const answerOk: IngestBehaviour = (_request, response) => {
  response.writeHead(200, { "content-type": "application/json" });
  response.end(JSON.stringify({ id: "0123456789abcdef0123456789abcdef" }));
};
