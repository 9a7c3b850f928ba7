import { describe, expect, it } from "vitest";

import { DiscardLedger, discardedCategories } from "./client-reports.ts";

const DSN = "https://k@o1.ingest.sentry.io/2";
const OTHER = "https://k2@o1.ingest.sentry.io/3";

function reportOf(body: Uint8Array) {
  const [header, item, payload] = new TextDecoder().decode(body).split("\n");
  return { header: JSON.parse(header!), item: JSON.parse(item!), payload: JSON.parse(payload!) };
}

describe("DiscardLedger", () => {
  it("sends one client report per DSN with every reason and category counted, as the SDKs write them", () => {
    const ledger = new DiscardLedger(20_000);
    ledger.count(DSN, "ratelimit_backoff", ["error"]);
    ledger.count(DSN, "ratelimit_backoff", ["error", "attachment"]);
    ledger.count(DSN, "network_error", ["transaction"]);
    ledger.count(OTHER, "queue_overflow", ["default"]);
    const due = ledger.takeDue(1_800_000_000_000);
    expect(due.map((report) => report.dsn)).toEqual([DSN, OTHER]);
    const { header, item, payload } = reportOf(due[0]!.body);
    expect(header).toEqual({ dsn: DSN, sent_at: "2027-01-15T08:00:00.000Z" });
    expect(item).toEqual({ type: "client_report" });
    expect(payload.timestamp).toBe(1_800_000_000);
    expect(payload.discarded_events).toEqual([
      { reason: "ratelimit_backoff", category: "error", quantity: 2 },
      { reason: "ratelimit_backoff", category: "attachment", quantity: 1 },
      { reason: "network_error", category: "transaction", quantity: 1 },
    ]);
    expect(ledger.dueIn(1_800_000_000_000)).toBeUndefined();
    // Written by the SDKs' own serializer: no newline after the last item, as their transports send it.
    expect(new TextDecoder().decode(due[0]!.body).split("\n")).toHaveLength(3);
  });

  it("never sends more than one report per DSN per period, and keeps what waits", () => {
    const ledger = new DiscardLedger(20_000);
    ledger.count(DSN, "ratelimit_backoff", ["error"]);
    expect(ledger.takeDue(0)).toHaveLength(1);
    ledger.count(DSN, "ratelimit_backoff", ["error"]);
    ledger.count(DSN, "ratelimit_backoff", ["error"]);
    expect(ledger.dueIn(5_000)).toBe(15_000);
    expect(ledger.takeDue(19_999)).toEqual([]);
    const [later] = ledger.takeDue(20_000);
    expect(reportOf(later!.body).payload.discarded_events).toEqual([{ reason: "ratelimit_backoff", category: "error", quantity: 2 }]);
  });

  it("takes back the counts of a report that could not be sent", () => {
    const ledger = new DiscardLedger(20_000);
    ledger.count(DSN, "network_error", ["error"]);
    const [failed] = ledger.takeDue(0);
    ledger.giveBack(failed!);
    ledger.count(DSN, "network_error", ["error"]);
    const [retried] = ledger.takeDue(20_000);
    expect(reportOf(retried!.body).payload.discarded_events).toEqual([{ reason: "network_error", category: "error", quantity: 2 }]);
  });

  it("holds a bounded number of counters whatever categories a client names", () => {
    const ledger = new DiscardLedger(20_000);
    for (let index = 0; index < 10_000; index += 1) ledger.count(DSN, "ratelimit_backoff", [`category-${index}`]);
    const [report] = ledger.takeDue(0);
    expect(reportOf(report!.body).payload.discarded_events).toHaveLength(256);
  });
});

describe("discardedCategories", () => {
  const envelope = (items: string) => new TextEncoder().encode(`{"dsn":"${DSN}"}\n${items}`);

  it("counts each item in its Sentry data category", () => {
    expect(discardedCategories(envelope('{"type":"event"}\n{}\n{"type":"attachment","length":2}\nab\n{"type":"replay_recording"}\nx\n'))).toEqual([
      "error",
      "attachment",
      "replay",
    ]);
  });

  it("counts what it cannot read, or a type it does not know, as one default", () => {
    expect(discardedCategories(undefined)).toEqual(["default"]);
    expect(discardedCategories(envelope("not json\n"))).toEqual(["default"]);
    expect(discardedCategories(envelope('{"type":"__proto__"}\n{}\n'))).toEqual(["default"]);
    // @sentry/core's envelopeItemTypeToDataCategory would call this category "future_thing".
    expect(discardedCategories(envelope('{"type":"future_thing"}\n{}\n'))).toEqual(["default"]);
  });
});
