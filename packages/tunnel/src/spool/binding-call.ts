/**
 * A binding of the spool's (its queue, its bucket, a byte budget) that failed or did not answer in
 * time, on a request's path: the envelope is lost, answered 503 `spool_unavailable`, and its line
 * names the binding as the operator set it.
 */
export class BindingFailed extends Error {
  /** The binding, as its Worker variable or option is called (`TUNNEL_SPOOL`, `spool.bucket`). */
  readonly binding: string;

  constructor(binding: string, cause: unknown) {
    super(`${binding} failed or did not answer`, { cause });
    this.name = "BindingFailed";
    this.binding = binding;
  }
}

/** How long a request may wait on a binding: its deadline's bound (`Deadline.bound`). */
export type Within = <T>(call: Promise<T>) => Promise<T>;

/** One call of `binding`, within the request's bound: what it resolves to, or a {@link BindingFailed} naming it. */
export async function callBinding<T>(binding: string, call: () => Promise<T>, within: Within): Promise<T> {
  try {
    return await within(call());
  } catch (error) {
    throw new BindingFailed(binding, error);
  }
}
