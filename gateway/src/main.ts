import { loadConfig, createLogger, onShutdown, connectNats, ensureStreams } from "@mailroom/kit";
import { buildGateway } from "./app.js";
import { createServiceClients } from "./deps.js";
import { natsTrackingEvents } from "./tracking-events.js";
import { KvTokenBuckets } from "./rate-limit-kv.js";

const config = loadConfig();
const logger = createLogger("gateway", config.logLevel);
// Every API request takes a rate-limit token over KV: no stack captured per request.
const nc = await connectNats(config.natsUrl, "gateway", { noAsyncTraces: true });
await ensureStreams(nc);

const app = await buildGateway({
  config,
  logger,
  clients: createServiceClients(config),
  tracking: natsTrackingEvents(nc),
  rateLimitPerMinute: config.rateLimitPerMinute,
  rateLimitBurst: config.rateLimitBurst,
  // Shared by every gateway process; an idle key's entry expires once it would be full again.
  rateLimitBuckets: await KvTokenBuckets.open(nc, { idleMs: Math.max(60_000, Math.ceil((config.rateLimitBurst / config.rateLimitPerMinute) * 60_000) * 2) }),
  authFailuresPerMinute: config.authFailuresPerMinute,
  authCacheMs: config.authCacheMs,
});
await app.listen({ port: config.httpPort, host: config.httpHost });
logger.info({ url: `http://${config.httpHost}:${config.httpPort}` }, "gateway listening");

onShutdown(logger, async () => {
  await app.close();
  await nc.drain();
});
