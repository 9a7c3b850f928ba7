import { json, type MetaFunction } from "@remix-run/cloudflare";

import { NotFoundPage } from "../pages/not-found";

export const meta: MetaFunction = () => [{ title: "Page not found · Edge Monitoring Tunnel" }];

/** Every path no other route claims: a real 404 status, not a 200 page that says "not found". */
export function loader() {
  return json(null, { status: 404 });
}

export default NotFoundPage;
