import { defineConfig } from "vitest/config";

const INCLUDE = ["services/**/*.test.ts", "gateway/**/*.test.ts", "cli/**/*.test.ts", "test/**/*.test.ts"];
/**
 * Suites that kill and restart whole units under a deadline: they run last, on their own,
 * so their timing neither suffers from nor spoils the suites beside them on two cores.
 */
const ALONE = ["test/delivery/kill-recovery.test.ts"];

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
      { extends: true, test: { name: "alone", include: ALONE, sequence: { groupOrder: 1 } } },
    ],
  },
});
