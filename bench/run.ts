/**
 * `npm run bench [renderer|delivery|api|store|broadcast|tracking|audience|suppressions|transactional|inbound …]`: runs the benchmarks one after another. Each prints
 * its figure beside a baseline measured in the same run and the ratio between them; none of
 * them asserts a time, so a slow machine gives slower figures, not failures.
 */
const benches: Record<string, () => Promise<unknown>> = {
  renderer: async () => (await import("./renderer.js")).runRendererBench(),
  delivery: async () => (await import("./delivery.js")).runDeliveryBench(),
  api: async () => (await import("./api.js")).runApiBench(),
  store: async () => (await import("./store.js")).runStoreBench(),
  broadcast: async () => (await import("./broadcast.js")).runBroadcastBench(),
  tracking: async () => (await import("./tracking.js")).runTrackingBench(),
  audience: async () => (await import("./audience.js")).runAudienceBench(),
  automation: async () => (await import("./automation.js")).runAutomationBench(),
  suppressions: async () => (await import("./suppressions.js")).runSuppressionsBench(),
  transactional: async () => (await import("./transactional.js")).runTransactionalBench(),
  inbound: async () => (await import("./inbound.js")).runInboundBench(),
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const names = wanted.length ? wanted : Object.keys(benches);
let failed = false;
for (const name of names) {
  const run = benches[name];
  if (!run) {
    console.error(`unknown benchmark "${name}"; choose from ${Object.keys(benches).join(", ")}`);
    failed = true;
    continue;
  }
  console.log(`\n=== ${name} ===`);
  try {
    await run();
  } catch (err) {
    failed = true;
    console.error(`${name} benchmark failed:`, err);
  }
}
process.exit(failed ? 1 : 0);
