/** A case run inside workerd: it returns what it observed, in JSON's terms. */
type Case = () => Promise<unknown>;

/**
 * The Worker of a file of cases that run inside workerd, where the code they test runs: `POST
 * /<name>` runs one and answers what it observed, as JSON; a case that throws answers 500 with the
 * error, which the Node side fails on. The assertions stay in the Node side's tests.
 */
export function serveCases(cases: Record<string, Case>): { fetch(request: Request): Promise<Response> } {
  return {
    async fetch(request) {
      const name = new URL(request.url).pathname.slice(1);
      const run = Object.hasOwn(cases, name) ? cases[name] : undefined;
      if (!run) return new Response(`no case "${name}"`, { status: 404 });
      try {
        return Response.json((await run()) ?? null);
      } catch (error) {
        return new Response(error instanceof Error ? (error.stack ?? error.message) : String(error), { status: 500 });
      }
    },
  };
}
