import path from "node:path";
import type { Reporter, TestModule } from "vitest/node";

const SLOWEST = 15;

/**
 * Ends the run with what shows the suite's growth — the slowest test files with their times
 * and the tests of each project — then one plain line, "Tests: N passed, N failed, N skipped",
 * that any CI log reader understands (vitest's own summary is coloured and split across
 * columns). The plain line stays the last line of the run.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>) {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const perProject = new Map<string, { files: number; passed: number; failed: number; skipped: number; seconds: number }>();
    const files: Array<{ file: string; project: string; seconds: number; tests: number }> = [];
    // Named again at the end: a CI log is often read from its tail only.
    const failures: string[] = [];
    for (const mod of testModules) {
      const project = mod.project.name || "(default)";
      const row = perProject.get(project) ?? { files: 0, passed: 0, failed: 0, skipped: 0, seconds: 0 };
      perProject.set(project, row);
      const d = mod.diagnostic();
      // What the file cost its worker: preparing, importing (the suite's own set-up code), hooks and tests.
      const seconds = (d.prepareDuration + d.environmentSetupDuration + d.setupDuration + d.collectDuration + d.duration) / 1000;
      row.files++;
      row.seconds += seconds;
      let tests = 0;
      const file = path.relative(process.cwd(), mod.moduleId);
      if (mod.state() === "failed" && [...mod.children.allTests()].length === 0) { // a suite that could not load
        failed++; row.failed++;
        failures.push(`  ${file} (${project}): ${firstLine(mod.errors()[0]?.message)}`);
      }
      for (const test of mod.children.allTests()) {
        tests++;
        const state = test.result().state;
        if (state === "passed") { passed++; row.passed++; }
        else if (state === "failed") {
          failed++; row.failed++;
          failures.push(`  ${file} (${project}) > ${test.fullName}: ${firstLine(test.result().errors?.[0]?.message)}`);
        }
        else { skipped++; row.skipped++; }
      }
      files.push({ file, project, seconds, tests });
    }
    failed += unhandledErrors.length;
    for (const err of unhandledErrors) failures.push(`  unhandled: ${firstLine((err as Error)?.message ?? String(err))}`);

    const out: string[] = [];
    if (files.length) {
      out.push("", `Slowest ${Math.min(SLOWEST, files.length)} test files (seconds in their worker: set-up, hooks and tests):`);
      for (const f of [...files].sort((a, b) => b.seconds - a.seconds).slice(0, SLOWEST)) {
        out.push(`  ${f.seconds.toFixed(1).padStart(7)} s  ${f.file} (${f.project}, ${f.tests} tests)`);
      }
      out.push("", "Tests per project:");
      for (const [name, r] of [...perProject].sort(([a], [b]) => a.localeCompare(b))) {
        out.push(`  ${name.padEnd(8)} ${String(r.passed + r.failed + r.skipped).padStart(5)} tests in ${String(r.files).padStart(3)} files: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped; ${Math.round(r.seconds)} s in workers`);
      }
    }
    if (failures.length) out.push("", "Failed:", ...failures);
    out.push("", `Tests: ${passed} passed, ${failed} failed, ${skipped} skipped`, "");
    process.stdout.write(out.join("\n"));
  }
}

function firstLine(message: string | undefined): string {
  return (message ?? "(no message)").split("\n")[0]!.slice(0, 300);
}
