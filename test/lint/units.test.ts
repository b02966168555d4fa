import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

/** The fixture tree's generated code, `depth` folders up (the repository's own code names the package @mailroom/proto). */
const genPath = (depth: number) => `${"../".repeat(depth)}gen/wire_pb.js`;

/**
 * The import-boundary rules of `npm run lint` (.dependency-cruiser.cjs): they pass on
 * the tree and fail on a crossing import, a library importing a unit, and a cycle.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const DEPCRUISE = path.join(ROOT, "node_modules/.bin/depcruise");
const CONFIG = ".dependency-cruiser.cjs";
/** The folders `npm run lint` cruises. */
const LINTED = ["gateway", "cli", "services", "deploy", "test", "bench", "bin"];

interface Violation {
  rule: string;
  from: string;
  to: string;
}

/**
 * Runs depcruise as `npm run lint` does (the "err" reporter, whose exit code fails the
 * lint) and reads its lines: `error <rule>: <from> → <to>` (a cycle goes on over lines).
 */
async function depcruise(cwd: string, dirs: string[]): Promise<{ exitCode: number; violations: Violation[] }> {
  const { exitCode, stdout } = await new Promise<{ exitCode: number; stdout: string }>((resolve, reject) => {
    execFile(DEPCRUISE, [...dirs, "--config", CONFIG], { cwd }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      if (code < 0 || !/dependency violations|no dependency violations/.test(stdout)) {
        reject(new Error(`depcruise did not run: ${err?.message ?? ""}\n${stdout}\n${stderr}`));
      } else resolve({ exitCode: code, stdout });
    });
  });
  const violations = [...stdout.matchAll(/^\s*error (\S+): (\S+) →\s*(\S+)/gm)].map(([, rule, from, to]) => ({ rule, from, to }));
  return { exitCode, violations };
}

/** A tiny tree shaped like ours: two units, a library, the same config. */
function fixtureTree(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "mailroom-lint-"));
  copyFileSync(path.join(ROOT, CONFIG), path.join(dir, CONFIG));
  const all: Record<string, string> = {
    "tsconfig.json": JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true } }),
    "gateway/src/main.ts": 'import { shared } from "../../services/lib/src/shared.js";\nexport const g = shared;\n',
    "services/alpha/src/main.ts": 'import { shared } from "../../lib/src/shared.js";\nimport { helper } from "./domain/helper.js";\nexport const a = shared + helper;\n',
    "services/alpha/src/domain/helper.ts": "export const helper = 1;\n",
    // Tests and their helpers may wire units together.
    "services/alpha/src/domain/helper.test.ts": 'import { b } from "../../../beta/src/main.js";\nexport const t = b;\n',
    "services/alpha/src/testing.ts": 'import { b } from "../../beta/src/main.js";\nexport const t = b;\n',
    "services/beta/src/main.ts": 'import { shared } from "../../lib/src/shared.js";\nexport const b = shared;\n',
    "services/lib/src/shared.ts": "export const shared = 1;\n",
    "gen/wire_pb.ts": "export const Wire = 1;\n",
    // Transports and adapters may use generated code; the domain may not.
    "services/beta/src/routes.ts": `import { Wire } from "${genPath(3)}";\nexport const r = Wire;\n`,
    // The pipeline library: its wire-free work.ts is a domain's to use, the publisher is not.
    "services/pipeline/src/work.ts": "export type DeliveryJobSpec = { deliveryId: string };\n",
    "services/pipeline/src/delivery-jobs.ts": `import { Wire } from "${genPath(3)}";\nexport const publish = Wire;\n`,
    "services/alpha/src/domain/dispatch.ts": 'import type { DeliveryJobSpec } from "../../../pipeline/src/work.js";\nexport const job: DeliveryJobSpec = { deliveryId: "d" };\n',
    ...files,
  };
  for (const [file, text] of Object.entries(all)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

const fixtures: string[] = [];
afterAll(() => {
  for (const dir of fixtures) rmSync(dir, { recursive: true, force: true });
});

describe("import boundaries (npm run lint)", () => {
  it("pass on a tree whose units import only themselves, libraries and tests' helpers", async () => {
    const dir = fixtureTree({});
    fixtures.push(dir);
    expect(await depcruise(dir, ["gateway", "services"])).toEqual({ exitCode: 0, violations: [] });
  }, 120_000);

  it("fail on a unit importing another unit, a library importing a unit, a cycle (type-only too), a domain importing generated code or the pipeline beyond work.ts, running code importing a test's fake", async () => {
    const dir = fixtureTree({
      "services/alpha/src/domain/crossing.ts": 'import { b } from "../../../beta/src/main.js";\nexport const c = b;\n',
      "services/lib/src/upward.ts": 'import { a } from "../../alpha/src/main.js";\nexport const u = a;\n',
      "services/beta/src/compile.ts": 'import { pieces } from "./snippets.js";\nexport type Piece = { lit: string };\nexport const c = pieces;\n',
      "services/beta/src/domain/wire.ts": `import { Wire } from "${genPath(4)}";\nexport const w = Wire;\n`,
      "services/beta/src/snippets.ts": 'import type { Piece } from "./compile.js";\nexport const pieces: Piece[] = [];\n',
      "services/beta/src/domain/publish.ts": 'import { publish } from "../../../pipeline/src/delivery-jobs.js";\nexport const p = publish;\n',
      // Running code that leans on a test's fake.
      "services/alpha/src/wiring.ts": 'import { t } from "./testing.js";\nexport const w = t;\n',
    });
    fixtures.push(dir);
    const { exitCode, violations } = await depcruise(dir, ["gateway", "services"]);
    expect(exitCode).not.toBe(0);
    expect(violations.sort((x, y) => x.rule.localeCompare(y.rule) || x.from.localeCompare(y.from))).toEqual([
      { rule: "no-circular", from: "services/beta/src/compile.ts", to: "services/beta/src/snippets.ts" },
      { rule: "no-cross-unit", from: "services/alpha/src/domain/crossing.ts", to: "services/beta/src/main.ts" },
      { rule: "no-library-to-unit", from: "services/lib/src/upward.ts", to: "services/alpha/src/main.ts" },
      { rule: "no-test-support-in-production", from: "services/alpha/src/wiring.ts", to: "services/alpha/src/testing.ts" },
      // (The crossing import also leaves alpha's domain for a transport: two rules, two lines.)
      { rule: "pure-domain", from: "services/alpha/src/domain/crossing.ts", to: "services/beta/src/main.ts" },
      { rule: "pure-domain", from: "services/beta/src/domain/publish.ts", to: "services/pipeline/src/delivery-jobs.ts" },
      { rule: "pure-domain", from: "services/beta/src/domain/wire.ts", to: "gen/wire_pb.ts" },
    ]);
  }, 120_000);

  it("pass on this repository", async () => {
    const { exitCode, violations } = await depcruise(ROOT, LINTED);
    expect(violations).toEqual([]);
    expect(exitCode).toBe(0);
    // A whole-repository cruise: ~10 s on a quiet runner, several times that on a busy one.
  }, 120_000);
});
