import { describe, expect, it } from "vitest";

/**
 * CI runs the suite on Node 20 and again on Node 24 (.ci/run): this names the version the test
 * processes themselves run, and fails when CI_EXPECT_NODE_MAJOR says another one was meant.
 */
describe("the Node.js running the tests", () => {
  it(`is ${process.version}`, () => {
    console.log(`test processes run node ${process.version}`);
    const expected = process.env.CI_EXPECT_NODE_MAJOR;
    if (expected) expect(process.versions.node.split(".")[0]).toBe(expected);
    expect(Number(process.versions.node.split(".")[0])).toBeGreaterThanOrEqual(20);
  });
});
