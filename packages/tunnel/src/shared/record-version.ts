/**
 * The version of the tunnel's record: its log lines' fields and its data points' positions. Each
 * line carries it as `v`, each data point as its fourth blob. Within a version a field or a
 * position is only ever added; one that changes meaning, moves or goes makes the next
 * (`packages/tunnel/STABILITY.md`), so that operators' queries, dashboards and alerts can tell.
 */
export const RECORD_VERSION = 1;

/** The same, as a data point's blob. */
export const RECORD_VERSION_BLOB = String(RECORD_VERSION);
