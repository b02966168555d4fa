/** Wiring only: config → adapters → domain → transports (SMTP listener, Connect server, JetStream consumer). */
import { startTracing } from "@mailroom/kit/tracing.js";
import { jetstream } from "@nats-io/jetstream";
import { DirectoryService } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import {
  connectClient,
  connectNats,
  createLogger,
  defaultServicePort,
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
import { ProviderWebhooks } from "./adapters/providers/index.js";
import { FixedSigningCertificate, HttpsSigningCertificates, HttpsSubscriptionConfirmer } from "./adapters/providers/sns.js";
import { inboundRoutes, rpcLogger } from "./routes.js";
import { startSmtpListener } from "./smtp.js";
import { loadInboundSettings } from "./settings.js";

const config = loadConfig();
const settings = loadInboundSettings();
const logger = createLogger("inbound", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("inbound");
const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool, service: "inbound" });
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
// Relay providers' event webhooks, forwarded by the gateway (DESIGN §9.7).
const webhooks = new ProviderWebhooks({
  settings: settings.providers,
  certificates: settings.providers.ses?.testCertificate
    ? new FixedSigningCertificate(settings.providers.ses.testCertificate)
    : new HttpsSigningCertificates(),
  confirmer: new HttpsSubscriptionConfirmer(),
  now: () => new Date(),
  logger,
});
// Before the SMTP listener, which the launcher waits for: by then the gateway can reach this server.
const server = await startConnectServer({
  routes: inboundRoutes(webhooks, inbound),
  port: config.servicePort ?? defaultServicePort(config, "inbound"),
  host: config.serviceHost,
  logger: rpcLogger(logger),
  healthy: () => !nc.isClosed(),
});
logger.info({ url: server.url, providers: Object.keys(settings.providers) }, "inbound service listening");
const smtp = await startSmtpListener({
  inbound,
  port: settings.port,
  host: config.serviceHost,
  maxMessageBytes: settings.maxMessageBytes,
  logger,
});
logger.info({ port: smtp.port, host: config.serviceHost, bounceDomain: settings.bounceDomain ?? "(bounces.<sender domain>)" }, "inbound SMTP listening");

onShutdown(logger, async () => {
  await smtp.close();
  await server.close();
  await sentEvents.stop();
  await nc.drain();
  await store.close();
});
