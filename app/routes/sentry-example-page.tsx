import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/cloudflare";
// `redirect` from here, not from the server runtime: the browser's button throws one too.
import { Form, isRouteErrorResponse, json, Link, redirect, useLoaderData, useRouteError } from "@remix-run/react";
import { useState, type ReactNode } from "react";

import { ErrorReference } from "../monitoring/error-reference";
import { SPOTLIGHT_ERRORS_PATH } from "../monitoring/local-defaults";
import { startedSentry } from "../monitoring/load-sentry";
import { currentSendSequence, useObservedSends, type ObservedSend } from "../monitoring/observed-sends";
import { admitSelfTest, selfTestHeaders, selfTestIntent } from "../monitoring/self-test.server";
import { NotFoundPage } from "../pages/not-found";

export const meta: MetaFunction = () => [{ title: "Self-test · Edge Monitoring Tunnel" }];

export const headers = selfTestHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  await admitSelfTest(context, request, { reports: false });
  const { sentry, upstreamOrigin } = context.config;
  // In development the upstream origin is Spotlight (`npm start` and `npm run dev` set it).
  const spotlight = sentry.environment === "development" && upstreamOrigin ? `${upstreamOrigin}${SPOTLIGHT_ERRORS_PATH}` : undefined;
  const search = new URL(request.url).searchParams;
  return { redirected: search.get("redirected"), failWhileHydrating: search.get("fail") === "hydration", spotlight: spotlight ?? null };
}

/** The server side of the self-test: a failing action, and a redirect thrown as Remix code does. */
export async function action({ request, context }: ActionFunctionArgs) {
  await admitSelfTest(context, request, { reports: false });
  const intent = await selfTestIntent(request);
  if (intent === "server-error") {
    await admitSelfTest(context, request, { reports: true });
    throw new Error("Self-test: an error thrown in a server action");
  }
  if (intent === "redirect") throw redirect("/sentry-example-page?redirected=server");
  return json({ error: "Unknown self-test" }, { status: 400 });
}

interface Trial {
  title: string;
  /** What the page expects to happen, in a sentence. */
  expected: string;
  since: number;
  /** The answer to wait for, if the trial sends anything. */
  awaits?: (answer: ObservedSend) => boolean;
  eventId?: string;
}

export default function SelfTest() {
  const { redirected, failWhileHydrating, spotlight } = useLoaderData<typeof loader>();
  return (
    <SelfTestPage redirected={redirected} spotlight={spotlight}>
      <FailsWhileHydrating when={failWhileHydrating} />
    </SelfTestPage>
  );
}

/** Renders on the server, and throws in the browser as it hydrates: before the SDK has loaded. */
function FailsWhileHydrating({ when }: { when: boolean }) {
  if (when && typeof document !== "undefined") throw new Error("Self-test: an error thrown while hydrating");
  return null;
}

/**
 * The server error's own outcome: the self-test stays on screen, with the reference of the event
 * the Worker sent to Sentry. The root error page is for real failures.
 */
export function ErrorBoundary() {
  const error = useRouteError();
  if (isRouteErrorResponse(error) && error.status === 404) return <NotFoundPage />;
  if (isRouteErrorResponse(error) && error.status === 429) {
    return (
      <SelfTestPage redirected={null}>
        <div role="status" className="card outcome" data-testid="self-test-outcome">
          <h2>Too many reports</h2>
          <p>This client has made the Worker report its share for now; nothing was sent. Try again in a few seconds.</p>
        </div>
      </SelfTestPage>
    );
  }
  // Remix shows the browser a server error only as this.
  const fromServer = error instanceof Error && error.message === "Unexpected Server Error";
  return (
    <SelfTestPage redirected={null}>
      <div role="status" className="card outcome" data-testid="self-test-outcome">
        <h2>{fromServer ? "Server error" : "Browser error"}</h2>
        <p>
          {fromServer
            ? "The Worker reported the error to Sentry itself, straight to the ingest rather than through the tunnel."
            : "The page reported the error through the tunnel once the SDK had loaded."}
        </p>
        <ErrorReference error={error} />
      </div>
    </SelfTestPage>
  );
}

function SelfTestPage({ redirected, spotlight = null, children }: { redirected: string | null; spotlight?: string | null; children?: ReactNode }) {
  const answers = useObservedSends();
  const [trial, setTrial] = useState<Trial>();

  function start(next: Omit<Trial, "since">) {
    const since = currentSendSequence();
    // After the current event handler: an error thrown by it is captured only once it has left.
    setTimeout(() => setTrial({ ...next, since, eventId: next.eventId ?? (next.awaits ? startedSentry()?.lastEventId() : undefined) }));
  }

  const answer = trial?.awaits && answers.find((candidate) => candidate.sequence > trial.since && trial.awaits?.(candidate));

  return (
    <section className="card" aria-labelledby="self-test-title">
      <h1 id="self-test-title">Self-test</h1>
      <p>
        Each button makes the app fail on purpose, so you can watch the failure arrive in Sentry — or, for the
        filtered ones, not arrive.
        {spotlight && (
          <>
            {" "}
            Locally, everything lands in <a href={spotlight}>Spotlight</a>, whose Errors view lists what the buttons send.
          </>
        )}
      </p>
      {redirected && (
        <p role="status" className="notice">
          Redirected by the {redirected === "server" ? "server" : "browser"}. Thrown redirects are never reported.
        </p>
      )}
      <Trials start={start} />
      {trial ? <TrialOutcome trial={trial} answer={answer || undefined} /> : children}
    </section>
  );
}

function Trials({ start }: { start: (trial: Omit<Trial, "since">) => void }) {
  return (
    <ul className="actions">
      <TrialButton
        label="Throw a client error"
        onClick={() => {
          start({
            title: "Client error",
            expected: "An error event goes through the tunnel.",
            awaits: (candidate) => candidate.itemTypes.includes("event"),
          });
          throw new Error("Self-test: an error thrown in the browser");
        }}
      />
      {/* A full page load, so that the error page comes from the server with the server's event id. */}
      <ServerTrial intent="server-error" label="Throw a server error" reloadDocument />
      <TrialButton
        label="Send a log"
        onClick={() => {
          startedSentry()?.logger.info("Self-test: a log from the browser", { page: "sentry-example-page" });
          start({
            title: "Log",
            expected: "The SDK sends buffered logs 5 s after the last one.",
            awaits: (candidate) => candidate.itemTypes.includes("log"),
          });
        }}
      />
      <TrialButton
        label="Throw a redirect in the browser"
        onClick={() => {
          // A redirect thrown outside a loader becomes an unhandled rejection: control flow, not a failure.
          void Promise.reject(redirect("/sentry-example-page?redirected=browser"));
          start({ title: "Thrown redirect (browser)", expected: "Filtered: nothing is sent." });
        }}
      />
      <ServerTrial intent="redirect" label="Throw a redirect on the server" />
      <TrialButton
        label="Trigger a noisy browser error"
        onClick={() => {
          // An aborted fetch left unhandled: the AbortError every navigation-away produces.
          void fetch(window.location.href, { signal: AbortSignal.abort() });
          start({ title: "Noisy browser error", expected: "Ignored: nothing is sent." });
        }}
      />
      <TrialLink to="/this-page-does-not-exist" label="Open a missing page" />
      <TrialLink to="/sentry-example-page/loader-error" label="Open a page whose loader throws" />
      {/* A full page load, so that the page hydrates again. */}
      <TrialLink to="/sentry-example-page?fail=hydration" label="Open this page failing as it hydrates" reloadDocument />
    </ul>
  );
}

function TrialOutcome({ trial, answer }: { trial: Trial; answer: ObservedSend | undefined }) {
  return (
    <div role="status" className="card outcome" data-testid="self-test-outcome">
      <h2>{trial.title}</h2>
      <p>{trial.expected}</p>
      {trial.eventId && (
        <p>
          Event <code data-testid="event-id">{trial.eventId}</code>
        </p>
      )}
      {trial.awaits && (
        <p data-testid="tunnel-answer">
          {answer === undefined
            ? "Waiting for the tunnel…"
            : answer.status === undefined
              ? "The tunnel could not be reached."
              : `The tunnel answered ${answer.status}.`}
        </p>
      )}
    </div>
  );
}

function TrialButton({ label, onClick }: { label: string; onClick: () => void }) {
  return (
    <li>
      <button type="button" className="button" onClick={onClick}>
        {label}
      </button>
    </li>
  );
}

function TrialLink({ to, label, reloadDocument }: { to: string; label: string; reloadDocument?: boolean }) {
  return (
    <li>
      <Link to={to} className="button" reloadDocument={reloadDocument}>
        {label}
      </Link>
    </li>
  );
}

/** A self-test that runs in this route's action. */
function ServerTrial({ intent, label, reloadDocument }: { intent: string; label: string; reloadDocument?: boolean }) {
  return (
    <li>
      <Form method="post" reloadDocument={reloadDocument}>
        <input type="hidden" name="intent" value={intent} />
        <button type="submit" className="button">
          {label}
        </button>
      </Form>
    </li>
  );
}
