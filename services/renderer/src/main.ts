import { startTracing } from "@mailroom/kit/tracing.js";
import { loadConfig, defaultServicePort } from "@mailroom/kit/config.js";
import { createLogger } from "@mailroom/kit/logger.js";
import { onShutdown, startConnectServer } from "@mailroom/kit/connect.js";
import { Renderer } from "./domain/renderer.js";
import { rendererRoutes } from "./routes.js";

const config = loadConfig();
const logger = createLogger("renderer", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("renderer");
const renderer = new Renderer({ secret: config.secret, publicUrl: config.publicUrl });
const server = await startConnectServer({
  routes: rendererRoutes(renderer),
  port: config.servicePort ?? defaultServicePort(config, "renderer"),
  host: config.serviceHost,
  logger,
});
logger.info({ url: server.url }, "renderer listening");
onShutdown(logger, () => server.close());
