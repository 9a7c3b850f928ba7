import { inspect } from "node:util";

interface Polling {
  /** How often to ask: a condition that itself sends requests can ask to be polled less often than every 20 ms. */
  pollMs?: number;
  /** What to say, when it gives up, of the state the condition looked at: the counts it compared, say. */
  saw?: () => unknown;
}

/**
 * Waits for a condition to become true, polling; fails after `timeoutMs`, saying what the condition
 * was and what `saw` reports of the state it last looked at. A condition that throws fails the wait
 * at once. Every wait in the tests is one of these, never a fixed sleep.
 */
export async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000, { pollMs = 20, saw }: Polling = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      const said = [`condition not met within ${timeoutMs} ms: ${condition.toString()}`];
      if (saw) said.push(`last seen: ${inspect(saw(), { depth: 4, breakLength: Infinity })}`);
      throw new Error(said.join("\n"));
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
