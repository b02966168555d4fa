import { defineConfig } from "vitest/config";
import { ALONE, COMPAT_SYSTEM_TESTS, POSTGRES_SYSTEM_TESTS, SHARED, SHARED_SYSTEMS_VARIABLE, SYSTEM_TESTS, TEST_STORE_VARIABLE, UNIT_ISOLATED, UNIT_TESTS, testSet } from "./test/harness/suites.js";

const compat = testSet() === "compat";
const systemTests = compat ? COMPAT_SYSTEM_TESTS : SYSTEM_TESTS;
const only = (files: string[]) => (compat ? files.filter((f) => COMPAT_SYSTEM_TESTS.includes(f)) : files);

/** What every project shares (the global set-up is the root's alone: it runs once for the run). */
const common = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: "forks",
} as const;

export default defineConfig({
  test: {
    ...common,
    // Suites that start nats-server and service processes share two cores.
    maxWorkers: 2,
    globalSetup: ["./test/harness/global-setup.ts"],
    // The plain summary last: its "Tests: N passed, N failed" line ends the run.
    reporters: ["default", "./test/hostile/summary-reporter.ts", "./test/summary-reporter.ts"],
    projects: [
      { test: { ...common, name: "unit", include: UNIT_TESTS, exclude: UNIT_ISOLATED, isolate: false, sequence: { groupOrder: 0 } } },
      { test: { ...common, name: "unit-isolated", include: UNIT_ISOLATED, sequence: { groupOrder: 0 } } },
      { test: { ...common, name: "system", include: systemTests, exclude: [...ALONE, ...SHARED], sequence: { groupOrder: 0 } } },
      // Workers that outlive a file, so the systems they start serve the files after it (useSystem).
      { test: { ...common, name: "shared", include: only(SHARED), isolate: false, env: { [SHARED_SYSTEMS_VARIABLE]: "1" }, sequence: { groupOrder: 0 } } },
      // The suites that exercise storage again, the whole system on PostgreSQL (sharing as above).
      ...(compat ? [] : [{ test: { ...common, name: "postgres", include: POSTGRES_SYSTEM_TESTS, isolate: false, env: { [SHARED_SYSTEMS_VARIABLE]: "1", [TEST_STORE_VARIABLE]: "postgres" }, sequence: { groupOrder: 0 } } }]),
      { test: { ...common, name: "alone", include: only(ALONE), fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
