import { json, type AppLoadContext, type HeadersFunction } from "@remix-run/cloudflare";

/** The self-test's form is one field of a few bytes. */
const MAX_FORM_BYTES = 1024;
/** A form that size arrives at once; one still arriving after this is stalling. */
const FORM_TIMEOUT_MS = 5_000;

/**
 * Lets a self-test request through, or throws its answer: 404 while the self-test is off (nothing
 * is reported), 403 for a request that would report but came from another site's page (an
 * `<img>`, an `<iframe>`: `Sec-Fetch-Site` says so), and 429 for a request that would make the
 * Worker report to Sentry on behalf of a client over its limit (the tunnel's, per client), so
 * that nobody can spend the project's quota by pressing the buttons in a loop.
 */
export async function admitSelfTest(context: AppLoadContext, request: Request, { reports }: { reports: boolean }): Promise<void> {
  if (!context.config.selfTest) throw json(null, { status: 404 });
  if (!reports) return;
  // `none`: typed or bookmarked; absent: not a browser, so no other site's page sent it.
  const site = request.headers.get("sec-fetch-site");
  if (site !== null && site !== "same-origin" && site !== "none") {
    throw json({ error: "The self-test reports only when pressed on this site's own pages." }, { status: 403 });
  }
  if (!(await context.clientMayReport(request))) {
    throw json(
      { error: "Too many self-test reports from this client; wait as Retry-After says." },
      { status: 429, headers: { "retry-after": String(context.tunnel.clientShare.periodSeconds) } },
    );
  }
}

/**
 * The self-test form's `intent`, read within {@link MAX_FORM_BYTES} and {@link FORM_TIMEOUT_MS}
 * before anything else is done with it. Anything else is answered, never reported: 405 for
 * another method, 400 for another body type, 413 for a larger body, 408 for one still arriving.
 */
export async function selfTestIntent(request: Request): Promise<string | null> {
  if (request.method !== "POST") throw json({ error: "The self-test takes a POST." }, { status: 405, headers: { allow: "POST" } });
  const type = (request.headers.get("content-type") ?? "").split(";", 1)[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw json({ error: "The self-test takes its own form, URL-encoded." }, { status: 400 });
  if (Number(request.headers.get("content-length") ?? 0) > MAX_FORM_BYTES) throw tooLarge();
  const body = await readAtMost(request, MAX_FORM_BYTES, FORM_TIMEOUT_MS);
  return new URLSearchParams(body).get("intent");
}

function tooLarge(): Response {
  return json({ error: `The self-test's form is at most ${MAX_FORM_BYTES} bytes.` }, { status: 413 });
}

/** The body as text, cut off past `maxBytes` (413) or `timeoutMs` (408), whatever it declared. */
async function readAtMost(request: Request, maxBytes: number, timeoutMs: number): Promise<string> {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let length = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(json({ error: "The self-test's form did not arrive in time." }, { status: 408 })), timeoutMs);
  });
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), stalled]);
      if (done) return text + decoder.decode();
      length += value.byteLength;
      if (length > maxBytes) throw tooLarge();
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    // A client that went away mid-body has sent no form.
    throw error instanceof Response ? error : json({ error: "The self-test's form was cut short." }, { status: 400 });
  } finally {
    clearTimeout(timer);
  }
}

/** The self-test routes' `headers`: a refused request's `Retry-After` reaches the client. */
export const selfTestHeaders: HeadersFunction = ({ errorHeaders }) => errorHeaders ?? new Headers();
