import { useSyncExternalStore } from "react";

/** One envelope the browser SDK sent through the tunnel, and the status it got: what the page shows. */
export interface ObservedSend {
  /** Counts up from 1 in each page: tells answers after an action from those before it. */
  sequence: number;
  /** `undefined` when the request failed before any answer (offline, blocked). */
  status: number | undefined;
  /** The event the envelope carried, if it carried one. */
  eventId: string | undefined;
  /** The envelope's item types: `event`, `transaction`, `log`, `session`, … */
  itemTypes: readonly string[];
}

/** Enough to find the answer to any recent action; older ones are of no use to the page. */
const KEPT_SENDS = 50;

let answers: readonly ObservedSend[] = [];
let sequence = 0;
const listeners = new Set<() => void>();

export function recordObservedSend(answer: Omit<ObservedSend, "sequence">): void {
  sequence += 1;
  answers = [...answers.slice(1 - KEPT_SENDS), { ...answer, sequence }];
  for (const listener of listeners) listener();
}

/** The sequence number the next answer will be above. */
export function currentSendSequence(): number {
  return sequence;
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

const NO_SENDS: readonly ObservedSend[] = [];

/** Oldest first; empty on the server and before the first envelope. */
export function useObservedSends(): readonly ObservedSend[] {
  return useSyncExternalStore(
    subscribe,
    () => answers,
    () => NO_SENDS,
  );
}
