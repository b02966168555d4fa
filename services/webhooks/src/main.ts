/** Wiring only: config → adapters → domain → transports (Connect routes, JetStream consumer, outbox loop). */
import { startTracing } from "@mailroom/kit/tracing.js";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import {
  connectNats,
  createLogger,
  defaultServicePort,
  loadConfig,
  onShutdown,
  startConnectServer,
  type Config,
  type Logger,
} from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { AuditPublisher } from "@mailroom/pipeline/audit.js";
import { bufferedAuditSink } from "@mailroom/kit/audit.js";
import { openStore } from "@mailroom/store/open.js";
import { secretKeysOf } from "@mailroom/kit/secrets.js";
import { systemClock } from "@mailroom/kit/clock.js";
import { systemIds } from "./adapters/ids.js";
import { openStores } from "./adapters/store.js";
import { CachedWebhookStore } from "./adapters/cached-webhooks.js";
import { NatsChangeFeed } from "./adapters/change-feed.js";
import { HttpWebhookSender } from "./adapters/http-sender.js";
import { NetworkPolicy } from "./adapters/network-policy.js";
import { Outbox } from "./domain/outbox.js";
import { Webhooks } from "./domain/webhooks.js";
import { consumeDirectoryEvents, consumeMailEvents, consumeWebhookEvents } from "./consumers.js";
import { webhookRoutes } from "./routes.js";
import { loadWebhooksSettings, type WebhooksSettings } from "./settings.js";

export interface RunningWebhooks {
  url: string;
  stop(): Promise<void>;
}

/** Starts the unit; the test suite starts it in-process with its own config and settings. */
export async function startWebhooks(config: Config, settings: WebhooksSettings, logger: Logger): Promise<RunningWebhooks> {
  const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool, service: "webhooks" });
  const collections = await openStores(store, secretKeysOf(config));
  const nc = await connectNats(config.natsUrl, "webhooks");
  await ensureMailStreams(nc);

  // Names this process in outbox claims (two processes never send one attempt at once) and in change announcements.
  const owner = `webhooks-${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
  const changes = new NatsChangeFeed(nc, owner, logger);
  const webhookStore = new CachedWebhookStore(collections.webhooks, settings.endpointCacheMs, (c) => changes.publish(c));
  const changeSubscription = changes.subscribe((c) => webhookStore.forget(c));
  // Server-side request forgery guard: the same policy at create/update and at every connection.
  const targets = new NetworkPolicy(settings.allowNetworks);
  const sender = new HttpWebhookSender(targets);
  const outbox = new Outbox({
    deliveries: collections.deliveries,
    webhooks: webhookStore,
    sender,
    clock: systemClock,
    logger,
    owner,
    settings: {
      timeoutMs: settings.timeoutMs,
      retryBaseMs: settings.retryBaseMs,
      maxPerEndpoint: settings.maxPerEndpoint,
      concurrency: settings.concurrency,
      pollMs: settings.pollMs,
      pause: { afterMs: settings.pauseAfterMs, minFailures: settings.pauseMinFailures },
    },
  });
  const wake = () => outbox.wake();
  const webhooks = new Webhooks({ webhooks: webhookStore, deliveries: collections.deliveries, clock: systemClock, ids: systemIds, logger, targets, wake });
  outbox.start();
  const dispatchDeps = { webhooks: webhookStore, deliveries: collections.deliveries, clock: systemClock, ids: systemIds, emailTags: collections.emailTags };
  const events = await consumeMailEvents(nc, dispatchDeps, wake, logger);
  const directoryEvents = await consumeDirectoryEvents(nc, dispatchDeps, wake, logger);
  const webhookEvents = await consumeWebhookEvents(nc, dispatchDeps, wake, logger);

  const server = await startConnectServer({
    routes: webhookRoutes(webhooks),
    port: config.servicePort ?? defaultServicePort(config, "webhooks"),
    host: config.serviceHost,
    // Changes made for the API, the console and the CLI go to the audit log (AUDIT stream).
    audit: bufferedAuditSink(new AuditPublisher(nc, logger), logger),
    logger,
    healthy: () => !nc.isClosed(),
  });
  logger.info({ url: server.url, store: store.kind, allowNetworks: settings.allowNetworks }, "webhooks listening");

  return {
    url: server.url,
    async stop() {
      await server.close();
      await events.stop();
      await directoryEvents.stop();
      await webhookEvents.stop();
      await outbox.stop();
      sender.close();
      changeSubscription.unsubscribe();
      await nc.drain();
      await store.close();
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const config = loadConfig();
  const logger = createLogger("webhooks", config.logLevel);
  // Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
  await startTracing("webhooks");
  const unit = await startWebhooks(config, loadWebhooksSettings(), logger);
  onShutdown(logger, () => unit.stop(), config.exitWithParent);
}
