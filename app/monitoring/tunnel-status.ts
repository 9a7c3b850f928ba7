import { useSyncExternalStore } from "react";

/** The tunnel's answer to one envelope the browser SDK sent. */
export interface TunnelAnswer {
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
const KEPT_ANSWERS = 50;

let answers: readonly TunnelAnswer[] = [];
let sequence = 0;
const listeners = new Set<() => void>();

export function recordTunnelAnswer(answer: Omit<TunnelAnswer, "sequence">): void {
  sequence += 1;
  answers = [...answers.slice(1 - KEPT_ANSWERS), { ...answer, sequence }];
  for (const listener of listeners) listener();
}

/** The sequence number the next answer will be above. */
export function currentTunnelSequence(): number {
  return sequence;
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

const NO_ANSWERS: readonly TunnelAnswer[] = [];

/** Oldest first; empty on the server and before the first envelope. */
export function useTunnelAnswers(): readonly TunnelAnswer[] {
  return useSyncExternalStore(
    subscribe,
    () => answers,
    () => NO_ANSWERS,
  );
}
