import type { LoaderFunctionArgs } from "@remix-run/cloudflare";

import { admitSelfTest, selfTestHeaders } from "../monitoring/self-test.server";

/** A page that always fails on the server, so the error page and the server's error report can be checked. */
export const headers = selfTestHeaders;

export async function loader({ request, context }: LoaderFunctionArgs): Promise<never> {
  await admitSelfTest(context, request, { reports: true });
  throw new Error("Self-test: a loader threw on purpose");
}

export default function LoaderError() {
  return null;
}
