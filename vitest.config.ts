import { defineConfig } from "vitest/config";

const INCLUDE = ["services/**/*.test.ts", "gateway/**/*.test.ts", "cli/**/*.test.ts", "test/**/*.test.ts"];
/**
 * Suites that kill and restart whole units under a deadline, and the two that run `npm start`
 * itself: they run last, one file at a time, so their timing neither suffers from nor spoils
 * the suites beside them on two cores, and two launchers never start together (each takes
 * the units' default ports when free: two at once both find a port free, then one unit
 * cannot bind it and the other launcher's gateway talks to the wrong system).
 */
const ALONE = ["test/delivery/kill-recovery.test.ts", "test/automation/crash.test.ts", "test/deploy/supervision.test.ts", "test/e2e/readme-examples.test.ts"];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Suites that start nats-server and service processes share two cores.
    maxWorkers: 2,
    reporters: ["default", "./test/summary-reporter.ts", "./test/hostile/summary-reporter.ts"],
    projects: [
      { extends: true, test: { name: "suites", include: INCLUDE, exclude: ALONE, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: "alone", include: ALONE, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
