/** Wiring only: config → adapters → domain → transports (SMTP listener, JetStream consumer). */
import { jetstream } from "@nats-io/jetstream";
import { DirectoryService } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import {
  connectClient,
  connectNats,
  createLogger,
  loadConfig,
  onShutdown,
  startConnectServer,
} from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { openStore } from "@mailroom/store/open.js";
import { ConnectSuppressions } from "./adapters/directory.js";
import { JetStreamMailEvents } from "./adapters/mail-events.js";
import { StoreSentDeliveries } from "./adapters/sent-deliveries.js";
import { tokenSecretsOf } from "@mailroom/content/tokens.js";
import { InboundMail } from "./domain/inbound.js";
import { consumeSentEvents } from "./consumers.js";
import { startSmtpListener } from "./smtp.js";
import { loadInboundSettings } from "./settings.js";

const config = loadConfig();
const settings = loadInboundSettings();
const logger = createLogger("inbound", config.logLevel);
const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, service: "inbound" });
const nc = await connectNats(config.natsUrl, "inbound");
await ensureMailStreams(nc);

const inbound = new InboundMail({
  sent: await StoreSentDeliveries.open(store, settings.rememberMs),
  suppressions: new ConnectSuppressions(connectClient(DirectoryService, config.urls.directory)),
  events: new JetStreamMailEvents(jetstream(nc)),
  clock: { now: () => new Date() },
  logger,
  policy: { secret: tokenSecretsOf(config), domains: settings.bounceDomain ? [settings.bounceDomain] : [] },
});
const sentEvents = await consumeSentEvents(nc, inbound, logger);
const smtp = await startSmtpListener({
  inbound,
  port: settings.port,
  host: config.serviceHost,
  maxMessageBytes: settings.maxMessageBytes,
  logger,
});
logger.info({ port: smtp.port, host: config.serviceHost, bounceDomain: settings.bounceDomain ?? "(bounces.<sender domain>)" }, "inbound SMTP listening");

// /healthz for container healthchecks, when given a service port (no RPCs of its own).
const health =
  config.servicePort === undefined
    ? undefined
    : await startConnectServer({ routes: () => {}, port: config.servicePort, host: config.serviceHost, logger, healthy: () => !nc.isClosed() });

onShutdown(logger, async () => {
  await smtp.close();
  await health?.close();
  await sentEvents.stop();
  await nc.drain();
  await store.close();
});
