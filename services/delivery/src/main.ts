import { loadConfig, defaultServicePort } from "../../kit/src/config.js";
import { startConnectServer, onShutdown } from "../../kit/src/connect.js";
import { connectNats, ensureStreams } from "../../kit/src/jetstream.js";
import { createLogger } from "../../kit/src/logger.js";
import { openStore } from "../../kit/src/store/open.js";
import { deliveryRoutes } from "./routes.js";
import { startDelivery } from "./service.js";
import { loadDeliverySettings } from "./settings.js";

const config = loadConfig();
const settings = loadDeliverySettings();
const logger = createLogger("delivery", config.logLevel);

// Every job costs a few requests (ack, outcome publish): skip capturing a stack trace for each.
const nc = await connectNats(config.natsUrl, "delivery", { noAsyncTraces: true });
await ensureStreams(nc);
const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, service: "delivery" });
const delivery = await startDelivery({ config, settings, logger, nc, store });
const server = await startConnectServer({
  routes: deliveryRoutes(delivery.admin),
  port: config.servicePort ?? defaultServicePort(config, "delivery"),
  host: "127.0.0.1",
  logger,
  healthy: () => !nc.isClosed(),
});
logger.info({ url: server.url }, "delivery service listening");

onShutdown(logger, async () => {
  await delivery.stop(); // stop pulling, finish or hand back in-flight jobs, close the pool
  await server.close();
  await store.close();
  await nc.drain();
});
