import type { Reporter, TestModule } from "vitest/node";

interface Layer {
  passed: number;
  failed: number;
  skipped: number;
  /** Seconds its files took, each from its start to its end, summed: what the layer costs the machine. */
  fileSeconds: number;
  /** From its first file's start to its last file's end: what it adds to the run, layers overlapping. */
  firstStart: number;
  lastEnd: number;
}

/**
 * Ends the run with one plain line per layer and one in all: `N passed, N failed, N skipped`, and
 * for each layer the time its files took and the wall-clock span it ran over (layers run side by
 * side, so the spans overlap and do not add up to the run).
 */
export default class SummaryReporter implements Reporter {
  readonly #started = new Map<TestModule, number>();
  readonly #layers = new Map<string, Layer>();

  onTestModuleStart(testModule: TestModule): void {
    this.#started.set(testModule, Date.now());
  }

  onTestModuleEnd(testModule: TestModule): void {
    const name = testModule.project.name || "default";
    const layer = this.#layers.get(name) ?? { passed: 0, failed: 0, skipped: 0, fileSeconds: 0, firstStart: Infinity, lastEnd: 0 };
    this.#layers.set(name, layer);
    const started = this.#started.get(testModule) ?? Date.now();
    const ended = Date.now();
    layer.fileSeconds += (ended - started) / 1000;
    layer.firstStart = Math.min(layer.firstStart, started);
    layer.lastEnd = Math.max(layer.lastEnd, ended);
    for (const test of testModule.children.allTests()) {
      const state = test.result().state;
      layer[state === "passed" ? "passed" : state === "failed" ? "failed" : "skipped"] += 1;
    }
  }

  onTestRunEnd(): void {
    const total = { passed: 0, failed: 0, skipped: 0 };
    for (const [name, layer] of [...this.#layers].sort(([a], [b]) => a.localeCompare(b))) {
      const span = (layer.lastEnd - layer.firstStart) / 1000;
      console.log(`${name}: ${layer.passed} passed, ${layer.failed} failed, ${layer.skipped} skipped; ${layer.fileSeconds.toFixed(1)} s in its files, over ${span.toFixed(1)} s`);
      total.passed += layer.passed;
      total.failed += layer.failed;
      total.skipped += layer.skipped;
    }
    console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
  }
}
