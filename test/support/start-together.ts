/**
 * Starts several things at once (servers, scripts, a browser), as `Promise.all` does; but when one
 * fails to start, the others that did are stopped before the error is thrown. Otherwise `afterAll`
 * never learns of them, and a `wrangler dev` left running loads every later test on the machine.
 */
export async function startTogether<T extends readonly unknown[] | []>(starts: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled<unknown>(starts as readonly unknown[]);
  const failed = settled.find((result) => result.status === "rejected");
  if (failed?.status === "rejected") {
    await Promise.all(settled.map((result) => (result.status === "fulfilled" ? stopQuietly(result.value) : undefined)));
    throw failed.reason;
  }
  return settled.map((result) => (result as PromiseFulfilledResult<unknown>).value) as { -readonly [K in keyof T]: Awaited<T[K]> };
}

async function stopQuietly(started: unknown): Promise<void> {
  const it = started as { stop?: () => Promise<void>; close?: () => Promise<void> };
  await (it.stop ?? it.close)?.call(it).catch(() => {});
}
