import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["services/**/*.test.ts", "gateway/**/*.test.ts", "cli/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Suites that start nats-server and service processes share two cores.
    maxWorkers: 2,
    reporters: ["default", "./test/summary-reporter.ts", "./test/hostile/summary-reporter.ts"],
  },
});
