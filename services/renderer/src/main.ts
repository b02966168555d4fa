import { loadConfig, defaultServicePort } from "../../kit/src/config.js";
import { createLogger } from "../../kit/src/logger.js";
import { onShutdown, startConnectServer } from "../../kit/src/connect.js";
import { rendererRoutes } from "./routes.js";

const config = loadConfig();
const logger = createLogger("renderer", config.logLevel);
const server = await startConnectServer({
  routes: rendererRoutes({ secret: config.secret, publicUrl: config.publicUrl }),
  port: config.servicePort ?? defaultServicePort(config, "renderer"),
  logger,
});
logger.info({ url: server.url }, "renderer listening");
onShutdown(logger, () => server.close());
