// npm run health [-- --day] [-- --html <file>]: the tunnel's last hour (or day) at a glance, from
// its Analytics Engine data points. docs/operating.md, "At a glance", says what each part shows.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { credentialsFrom, HealthQueryError, isEmpty, readHealth } from "./health-report.ts";
import { htmlView, terminalView } from "./health-views.ts";

const { values } = parseArgs({ options: { day: { type: "boolean", default: false }, html: { type: "string" } }, allowPositionals: false, strict: true });
const window = values.day ? "day" : "hour";

const credentials = credentialsFrom(process.env);
if (typeof credentials === "string") {
  console.error(credentials);
  process.exit(2);
}

try {
  const report = await readHealth(credentials, window);
  if (isEmpty(report)) {
    console.log(`No data points in tunnel_envelopes for the last ${window}: the tunnel has had no request, or its Worker has no TUNNEL_ANALYTICS bound.`);
  } else {
    const now = Date.now();
    process.stdout.write(terminalView(report, now, process.stdout.isTTY === true));
    if (values.html) {
      writeFileSync(values.html, htmlView(report, now));
      console.log(`\nThe same as a page: ${values.html}`);
    }
  }
} catch (error) {
  if (!(error instanceof HealthQueryError)) throw error;
  console.error(error.message);
  process.exit(1);
}
