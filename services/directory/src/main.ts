import { readFile } from "node:fs/promises";
import { createLogger, defaultServicePort, errorInfoOf, loadConfig, onShutdown, startConnectServer } from "../../kit/src/index.js";
import { openStore } from "../../kit/src/store/open.js";
import { createDirectory } from "./directory.js";
import { directoryRoutes } from "./routes.js";

const config = loadConfig();
const logger = createLogger("directory", config.logLevel);
const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, service: "directory" });
const directory = await createDirectory(store);

if (config.bootstrapFile) {
  try {
    const ids = await directory.bootstrap.loadJson(await readFile(config.bootstrapFile, "utf8"));
    logger.info({ workspaces: ids, file: config.bootstrapFile }, "bootstrap loaded");
  } catch (err) {
    logger.fatal({ file: config.bootstrapFile, reason: errorInfoOf(err)?.message ?? (err as Error).message }, "cannot load MAILROOM_BOOTSTRAP");
    process.exit(1);
  }
}

const server = await startConnectServer({
  routes: directoryRoutes(directory),
  port: config.servicePort ?? defaultServicePort(config, "directory"),
  host: process.env.MAILROOM_SERVICE_HOST ?? "127.0.0.1",
  logger,
});
logger.info({ url: server.url, store: store.kind }, "directory listening");

onShutdown(logger, async () => {
  await server.close();
  await store.close();
});
