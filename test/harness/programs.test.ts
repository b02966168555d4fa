import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { PROGRAM_PACKAGES, findProgram, missingProgramMessage, requireProgram, type Program } from "./programs.js";

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../.ci/system-packages");

/** The "program package" pairs of the install script's PROGRAMS array. */
function scriptTable(): Record<string, string> {
  const body = /PROGRAMS=\(\n([\s\S]*?)\n\)/.exec(readFileSync(SCRIPT, "utf8"))?.[1] ?? "";
  return Object.fromEntries([...body.matchAll(/^\s*"(\S+) (\S+)"/gm)].map((m) => [m[1], m[2]]));
}

describe("the programs the suites start", () => {
  it("are the ones .ci/system-packages installs, with the same packages", () => {
    expect(scriptTable()).toEqual(PROGRAM_PACKAGES);
  });

  it("a missing program is refused with its package named, not ENOENT", () => {
    const saved = process.env.PATH;
    // No PATH, and a name no sbin folder holds: findProgram must answer undefined.
    process.env.PATH = "";
    try {
      const fake = "mailroom-no-such-program" as Program;
      expect(findProgram(fake)).toBeUndefined();
      expect(() => requireProgram(fake)).toThrow(/^mailroom-no-such-program is not installed: apt-get install /);
    } finally {
      process.env.PATH = saved;
    }
    expect(missingProgramMessage("swaks")).toMatch(/apt-get install swaks/);
    expect(missingProgramMessage("promtool")).toMatch(/apt-get install prometheus/);
    expect(missingProgramMessage("script")).toMatch(/apt-get install bsdutils/);
  });

  it("every one of them is on this machine once the install script ran", () => {
    // .ci/run runs .ci/system-packages first; under CI nothing may be missing.
    const missing = (Object.keys(PROGRAM_PACKAGES) as Program[]).filter((p) => !findProgram(p));
    if (process.env.CI) expect(missing).toEqual([]);
    else if (missing.length) console.log(`test/harness/programs: not installed here: ${missing.map(missingProgramMessage).join("; ")}`);
  });
});
