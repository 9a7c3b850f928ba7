/**
 * Waits for a condition to become true, polling; fails after `timeoutMs`. Every wait in the tests is one of these, never a fixed sleep.
 * A condition that itself sends requests can ask to be polled less often than every 20 ms.
 */
export async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000, pollMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
