/** A page that always fails on the server, so the error page and the server's error report can be checked. */
export function loader(): never {
  throw new Error("Self-test: a loader threw on purpose");
}

export default function LoaderError() {
  return null;
}
