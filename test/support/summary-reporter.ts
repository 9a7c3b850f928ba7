import type { Reporter, TestModule } from "vitest/node";

/** Ends the run with one plain `N passed, N failed, N skipped` line, per layer and in all. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const byLayer = new Map<string, { passed: number; failed: number; skipped: number }>();
    const total = { passed: 0, failed: 0, skipped: 0 };
    for (const testModule of testModules) {
      const layer = testModule.project.name || "default";
      const counts = byLayer.get(layer) ?? { passed: 0, failed: 0, skipped: 0 };
      byLayer.set(layer, counts);
      for (const test of testModule.children.allTests()) {
        const state = test.result().state;
        const key = state === "passed" ? "passed" : state === "failed" ? "failed" : "skipped";
        counts[key] += 1;
        total[key] += 1;
      }
    }
    for (const [layer, counts] of [...byLayer].sort()) {
      console.log(`${layer}: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
    }
    console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
  }
}
