import type { Reporter, TestModule } from "vitest/node";
import type { SummaryRows } from "./support.js";

/**
 * Prints the hostile suite's findings as one table at the end of the run (kills survived,
 * messages lost, duplicates, fuzzed requests and 5xx per route, isolation checks, flood p99,
 * RSS start/end). Each test leaves its rows in `task.meta.hostile`; nothing prints without them.
 */
export default class HostileSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const rows: Array<[string, string, string]> = [];
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const meta = (test.meta() as { hostile?: SummaryRows }).hostile;
        if (!meta) continue;
        const state = test.result().state;
        for (const [k, v] of meta) rows.push([k, String(v), state]);
      }
    }
    if (!rows.length) return;
    const w0 = Math.min(70, Math.max(...rows.map((r) => r[0].length)));
    const line = (a: string, b: string, c: string) => `| ${a.padEnd(w0)} | ${b} ${c === "passed" ? "" : `(${c})`}`.trimEnd();
    process.stdout.write(`\nHostile suite summary (${process.env.HOSTILE_LONG === "1" ? "long" : "short"} form)\n`);
    process.stdout.write(`${line("check", "result", "passed")}\n| ${"-".repeat(w0)} | ${"-".repeat(30)}\n`);
    for (const [k, v, state] of rows) process.stdout.write(`${line(k, v, state)}\n`);
  }
}
