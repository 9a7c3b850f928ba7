// `npm run health`'s two views of one report: the terminal's, charts drawn in text by asciichart,
// and a self-contained HTML page, charts drawn as SVG by Observable Plot (on linkedom's document,
// so that no browser is needed to draw them).
import * as Plot from "@observablehq/plot";
import * as asciichart from "asciichart";
import { parseHTML } from "linkedom";

import type { HealthReport } from "./health-report.ts";

/** The live outcomes, in the order an operator reads them. */
const OUTCOMES = ["forwarded", "spooled", "rejected", "failed"] as const;

/** The figures both views lead with. */
export interface HealthFigures {
  /** Envelopes per live outcome (forwarded, spooled, rejected, failed). */
  outcomes: Record<(typeof OUTCOMES)[number], number>;
  projects: [string, number][];
  refused: number;
  lost: number;
  /** The spool's deepest backlog and oldest envelope in the window, and the last known; `null` when never read. */
  backlogPeak: number | null;
  backlogLast: number | null;
  oldestPeakSeconds: number | null;
  deliveredFromSpool: number;
  /** Sentry's answer time: the latest bucket's median, and the worst bucket's 95th percentile. */
  sentryLatestP50Ms: number | null;
  sentryWorstP95Ms: number | null;
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

function figuresOf(report: HealthReport): HealthFigures {
  const outcomes = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, sum(report.envelopes.filter((row) => row.outcome === outcome).map((row) => row.envelopes))])) as HealthFigures["outcomes"];
  const projects = new Map<string, number>();
  for (const row of report.envelopes) if (row.project) projects.set(row.project, (projects.get(row.project) ?? 0) + row.envelopes);
  const known = report.spool.filter((row) => row.backlog >= 0);
  const ages = report.spool.filter((row) => row.oldest_age_s >= 0).map((row) => row.oldest_age_s);
  return {
    outcomes,
    projects: [...projects].sort(([, a], [, b]) => b - a),
    refused: sum(report.refusals.map((row) => row.requests)),
    lost: sum(report.losses.map((row) => row.envelopes)),
    backlogPeak: known.length ? Math.max(...known.map((row) => row.backlog)) : null,
    backlogLast: known.at(-1)?.backlog_last ?? null,
    oldestPeakSeconds: ages.length ? Math.max(...ages) : null,
    deliveredFromSpool: sum(report.spool.map((row) => row.delivered_in_batches)),
    sentryLatestP50Ms: report.sentry.at(-1)?.p50_ms ?? null,
    sentryWorstP95Ms: report.sentry.length ? Math.max(...report.sentry.map((row) => row.p95_ms)) : null,
  };
}

/** The window's buckets, oldest first, as the queries name them (`YYYY-MM-DD HH:MM:SS`, UTC). */
function bucketsOf(report: HealthReport, now: number): string[] {
  const size = report.bucketMinutes * 60_000;
  const count = report.window === "hour" ? 60 : 96;
  const last = Math.floor(now / size) * size;
  return Array.from({ length: count }, (_, index) => new Date(last - (count - 1 - index) * size).toISOString().slice(0, 19).replace("T", " "));
}

const windowName = (report: HealthReport) => (report.window === "hour" ? "the last hour, by the minute" : "the last day, by the quarter hour");
const count = (value: number) => Math.round(value).toLocaleString("en-US");
const orNone = (value: number | null, unit: string) => (value === null ? "unknown" : `${count(value)}${unit}`);

/** One series per bucket: the sum of `value` over rows in it. */
function series<Row extends { minute: string }>(buckets: readonly string[], rows: readonly Row[], value: (row: Row) => number): number[] {
  return buckets.map((bucket) => sum(rows.filter((row) => row.minute === bucket).map(value)));
}

/** The terminal's view; `color` only where the output is a terminal. */
export function terminalView(report: HealthReport, now: number, color: boolean): string {
  const figures = figuresOf(report);
  const buckets = bucketsOf(report, now);
  const chart = (lines: number[][], colors: asciichart.Color[]) =>
    asciichart.plot(lines, { height: 6, ...(color ? { colors } : {}), format: (value: number) => count(value).padStart(8) });
  const table = (rows: [string, number][]) => (rows.length ? rows.map(([name, value]) => `    ${name.padEnd(24)} ${count(value).padStart(10)}`).join("\n") : "    none");
  const out = [
    `Tunnel health: ${windowName(report)} (${buckets[0]} to ${buckets.at(-1)} UTC)`,
    "",
    `Envelopes: ${OUTCOMES.map((outcome) => `${count(figures.outcomes[outcome])} ${outcome}`).join(" · ")}`,
    `  by project: ${figures.projects.map(([project, value]) => `${project} ${count(value)}`).join(" · ") || "none"}`,
    chart(
      OUTCOMES.map((outcome) => series(buckets, report.envelopes, (row) => (row.outcome === outcome ? row.envelopes : 0))),
      [asciichart.green, asciichart.blue, asciichart.yellow, asciichart.red],
    ),
    `  ${OUTCOMES.map((outcome, index) => `${["green", "blue", "yellow", "red"][index]}: ${outcome}`).join(", ")}`,
    "",
    `Refused: ${count(figures.refused)}, by reason:`,
    table(report.refusals.map((row) => [row.reason, row.requests])),
    `Lost: ${count(figures.lost)}, by reason:`,
    table(report.losses.map((row) => [`${row.outcome === "spool" ? "spool " : ""}${row.reason}`, row.envelopes])),
    "",
    `Spool: backlog ${orNone(figures.backlogLast, "")} at last read (peak ${orNone(figures.backlogPeak, "")}), oldest envelope peak ${orNone(figures.oldestPeakSeconds, " s")}, ${count(figures.deliveredFromSpool)} delivered from it`,
    chart([series(buckets, report.spool, (row) => Math.max(0, row.backlog))], [asciichart.blue]),
    "",
    `Sentry: answer ${orNone(figures.sentryLatestP50Ms, " ms")} median in the latest ${report.bucketMinutes === 1 ? "minute" : "quarter hour"}, ${orNone(figures.sentryWorstP95Ms, " ms")} at the worst 95th percentile`,
    `  statuses: ${report.statuses.map((row) => `${row.status} ×${count(row.envelopes)}`).join(" · ") || "none"}`,
    chart([series(buckets, report.sentry, (row) => row.p50_ms), series(buckets, report.sentry, (row) => row.p95_ms)], [asciichart.green, asciichart.red]),
    "  green: median, red: 95th percentile (ms)",
  ];
  return `${out.join("\n")}\n`;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

/** A self-contained page: the same figures, and the same charts as SVG. */
export function htmlView(report: HealthReport, now: number): string {
  const figures = figuresOf(report);
  const buckets = bucketsOf(report, now);
  const { document } = parseHTML("<!doctype html><html><body></body></html>");
  const at = (minute: string) => new Date(`${minute.replace(" ", "T")}Z`);
  const interval = report.bucketMinutes === 1 ? "minute" : "15 minutes";
  const domain = [at(buckets[0]!), new Date(at(buckets.at(-1)!).getTime() + report.bucketMinutes * 60_000)];
  const plot = (options: Plot.PlotOptions) => Plot.plot({ document, width: 880, height: 220, marginLeft: 56, x: { type: "utc", domain, label: null }, ...options }).outerHTML;
  const envelopesChart = plot({
    color: { legend: true, domain: [...OUTCOMES], range: ["#2e7d32", "#1565c0", "#f9a825", "#c62828"] },
    y: { label: "envelopes", grid: true },
    marks: [Plot.rectY(report.envelopes.filter((row) => row.outcome !== "preflight"), { x: (row) => at(row.minute), y: "envelopes", fill: "outcome", interval }), Plot.ruleY([0])],
  });
  const spoolChart = plot({
    y: { label: "backlog (envelopes)", grid: true },
    marks: [Plot.lineY(report.spool.filter((row) => row.backlog >= 0), { x: (row) => at(row.minute), y: "backlog", stroke: "#1565c0", marker: true }), Plot.ruleY([0])],
  });
  const latency = report.sentry.flatMap((row) => [
    { at: at(row.minute), ms: row.p50_ms, line: "median" },
    { at: at(row.minute), ms: row.p95_ms, line: "95th percentile" },
  ]);
  const sentryChart = plot({
    color: { legend: true, domain: ["median", "95th percentile"], range: ["#2e7d32", "#c62828"] },
    y: { label: "answer (ms)", grid: true },
    marks: [Plot.lineY(latency, { x: "at", y: "ms", stroke: "line", z: "line", marker: true }), Plot.ruleY([0])],
  });
  const figure = (name: string, label: string, value: string) => `<div><dt>${escapeHtml(label)}</dt><dd data-figure="${name}">${escapeHtml(value)}</dd></div>`;
  const rows = (cells: [string, number][], empty: string) =>
    cells.length ? cells.map(([name, value]) => `<tr><td>${escapeHtml(name)}</td><td class="n">${count(value)}</td></tr>`).join("") : `<tr><td colspan="2">${empty}</td></tr>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Tunnel health: ${windowName(report)}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 920px; color: #1b1b1b; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
dl { display: grid; grid-template-columns: repeat(4, 1fr); gap: 8px; }
dl div { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; }
dt { color: #555; font-size: 12px; } dd { margin: 0; font-size: 20px; font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; min-width: 320px; } th, td { padding: 2px 12px 2px 0; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
</style>
</head>
<body>
<h1>Tunnel health: ${windowName(report)}</h1>
<p>${escapeHtml(buckets[0]!)} to ${escapeHtml(buckets.at(-1)!)} UTC, from the <code>tunnel_envelopes</code> dataset.</p>
<dl>
${OUTCOMES.map((outcome) => figure(outcome, `envelopes ${outcome}`, count(figures.outcomes[outcome]))).join("\n")}
${figure("refused", "refused", count(figures.refused))}
${figure("lost", "lost", count(figures.lost))}
${figure("spool-backlog", "spool backlog, at last read", orNone(figures.backlogLast, ""))}
${figure("spool-oldest", "oldest envelope, peak", orNone(figures.oldestPeakSeconds, " s"))}
${figure("spool-delivered", "delivered from the spool", count(figures.deliveredFromSpool))}
${figure("sentry-p50", "Sentry's answer, latest median", orNone(figures.sentryLatestP50Ms, " ms"))}
${figure("sentry-p95", "Sentry's answer, worst 95th percentile", orNone(figures.sentryWorstP95Ms, " ms"))}
</dl>
<h2>Envelopes per ${report.bucketMinutes === 1 ? "minute" : "quarter hour"}, by outcome</h2>
${envelopesChart}
<table id="projects"><tr><th>project</th><th>envelopes</th></tr>${rows(figures.projects, "none")}</table>
<h2>Refused, by reason</h2>
<table id="refusals"><tr><th>reason</th><th>requests</th></tr>${rows(report.refusals.map((row) => [row.reason, row.requests]), "none")}</table>
<h2>Lost, by reason</h2>
<table id="losses"><tr><th>reason</th><th>envelopes</th></tr>${rows(report.losses.map((row) => [`${row.outcome === "spool" ? "spool " : ""}${row.reason}`, row.envelopes]), "none")}</table>
<h2>The spool's backlog</h2>
${spoolChart}
<h2>Sentry's answer</h2>
${sentryChart}
<table id="statuses"><tr><th>status</th><th>envelopes</th></tr>${rows(report.statuses.map((row) => [String(row.status), row.envelopes]), "none")}</table>
</body>
</html>
`;
}
