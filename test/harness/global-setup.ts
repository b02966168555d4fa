import { buildUnitBundles, UNIT_BUNDLES_VARIABLE } from "./unit-bundles.js";
import { openRunRegistry, RUN_REGISTRY_VARIABLE } from "./run-registry.js";

/**
 * Once per `vitest run`, before any suite, what every suite would otherwise pay for itself:
 * - the units' prebuilt modules, so every system the suites start loads them instead of
 *   transforming TypeScript at each start (MAILROOM_TEST_TSX=1 keeps the units on tsx, to
 *   compare or to debug a bundling difference);
 * - whether a container runtime exists (testcontainers' probe costs each nats-server start
 *   about 2 s and 0.6 s of CPU when there is none);
 * - a registry of the processes and folders of the systems that suites share, stopped and
 *   removed here at the end whatever happened to the workers that started them.
 * The variables are set before vitest forks its workers and reach every process they spawn.
 *
 * Vitest runs the global set-up of each project, some of them at once, each in its own module
 * instance: the first call prepares, the others wait for it, and the last teardown cleans up.
 */
interface Prepared {
  users: number;
  ready: Promise<Array<() => Promise<void>>>;
}
const SLOT = Symbol.for("mailroom.test.global-setup");
const slots = globalThis as unknown as Record<symbol, Prepared | undefined>;

export default async function setup(): Promise<() => Promise<void>> {
  const prepared = (slots[SLOT] ??= { users: 0, ready: prepare() });
  prepared.users++;
  const cleanups = await prepared.ready;
  return async () => {
    if (--prepared.users > 0) return;
    slots[SLOT] = undefined;
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
}

async function prepare(): Promise<Array<() => Promise<void>>> {
  const cleanups: Array<() => Promise<void>> = [];
  if (process.env.MAILROOM_TEST_TSX !== "1" && !process.env[UNIT_BUNDLES_VARIABLE]) {
    const started = Date.now();
    const bundles = await buildUnitBundles();
    process.env[UNIT_BUNDLES_VARIABLE] = bundles.dir;
    console.log(`units prebuilt for this run in ${Date.now() - started} ms`);
    cleanups.push(async () => {
      delete process.env[UNIT_BUNDLES_VARIABLE];
      await bundles.remove();
    });
  }
  if (process.env.MAILROOM_TEST_CONTAINERS === undefined && !(await containerRuntime())) process.env.MAILROOM_TEST_CONTAINERS = "0";
  const registry = await openRunRegistry();
  process.env[RUN_REGISTRY_VARIABLE] = registry.dir;
  cleanups.push(async () => {
    delete process.env[RUN_REGISTRY_VARIABLE];
    await registry.cleanUp();
  });
  return cleanups;
}

async function containerRuntime(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}
