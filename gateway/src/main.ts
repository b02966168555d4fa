import { loadConfig, createLogger, onShutdown, connectNats, ensureStreams } from "../../services/kit/src/index.js";
import { buildGateway } from "./app.js";
import { createServiceClients } from "./deps.js";
import { natsTrackingEvents } from "./tracking-events.js";

const config = loadConfig();
const logger = createLogger("gateway", config.logLevel);
const nc = await connectNats(config.natsUrl, "gateway");
await ensureStreams(nc);

const app = await buildGateway({
  config,
  logger,
  clients: createServiceClients(config),
  tracking: natsTrackingEvents(nc),
  rateLimitPerMinute: Number(process.env.MAILROOM_RATE_LIMIT_PER_MINUTE ?? 6000),
  authCacheMs: Number(process.env.MAILROOM_AUTH_CACHE_MS ?? 10_000),
});
await app.listen({ port: config.httpPort, host: config.httpHost });
logger.info({ url: `http://${config.httpHost}:${config.httpPort}` }, "gateway listening");

onShutdown(logger, async () => {
  await app.close();
  await nc.drain();
});
