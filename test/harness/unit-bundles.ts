import { mkdir, mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { build } from "esbuild";
import { REPO_ROOT, UNITS } from "../../deploy/processes.js";

/**
 * Every unit's code as one prebuilt ES module per unit, made once per test run. A unit started
 * through tsx transforms and resolves each of its hundreds of TypeScript modules at every start
 * (about 3 s of CPU for the gateway here, 1 s for a service); from a bundle it loads in a
 * third of that, and the suites start well over a hundred units a run. esbuild is what tsx
 * itself transforms with, so the code that runs is the same. Packages from node_modules stay
 * imports (native lmdb, optional OpenTelemetry loaded on demand); the bundles live under the
 * repository's node_modules so those imports resolve as they do from the sources.
 */
export const UNIT_BUNDLES_VARIABLE = "MAILROOM_UNIT_BUNDLES";

export async function buildUnitBundles(): Promise<{ dir: string; remove(): Promise<void> }> {
  const parent = path.join(REPO_ROOT, "node_modules", ".cache", "mailroom-unit-bundles");
  await mkdir(parent, { recursive: true });
  const dir = await mkdtemp(path.join(parent, "run-"));
  await build({
    entryPoints: Object.fromEntries(UNITS.map((u) => [u.name, path.join(REPO_ROOT, u.entry)])),
    outdir: dir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // A stack trace maps back to the sources with --enable-source-maps; costs nothing otherwise.
    sourcemap: "linked",
    logLevel: "warning",
    plugins: [{
      name: "packages-stay-imports",
      setup(b) {
        // Bare specifiers are packages, except the repository's own workspace libraries.
        b.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith("@mailroom/") ? undefined : { external: true }));
      },
    }],
  });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
