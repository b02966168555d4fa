import { startTracing } from "@mailroom/kit/tracing.js";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { RendererService } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import {
  connectClient,
  connectNats,
  createLogger,
  defaultServicePort,
  loadConfig,
  newId,
  newMessageId,
  onShutdown,
  startConnectServer,
} from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { AuditPublisher } from "@mailroom/pipeline/audit.js";
import { bufferedAuditSink } from "@mailroom/kit/audit.js";
import { openStore } from "@mailroom/store/open.js";
import { ContentStore } from "@mailroom/pipeline/content-store.js";
import { DeliveryJobPublisher } from "@mailroom/pipeline/delivery-jobs.js";
import { WebhookEventPublisher } from "@mailroom/pipeline/webhook-events.js";
import { systemClock } from "@mailroom/kit/clock.js";
import { Broadcasts } from "./domain/broadcasts.js";
import { Sender } from "./domain/sending.js";
import { openStores } from "./adapters/store.js";
import { DirectoryClient } from "./adapters/directory.js";
import { AudienceService } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { RendererClient } from "./adapters/renderer.js";
import { PublishedBroadcastEvents } from "./adapters/events.js";
import { sendingStepScope } from "./adapters/tracing.js";
import { consumeBroadcastEvents } from "./consumers.js";
import { broadcastRoutes } from "./routes.js";
import { loadBroadcastSettings } from "./settings.js";
import { preSendCheck } from "./check-wiring.js";

const config = loadConfig();
const settings = loadBroadcastSettings();
const logger = createLogger("broadcast", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("broadcast");
const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool, service: "broadcast" });
const repos = await openStores(store);
const nc = await connectNats(config.natsUrl, "broadcast");
await ensureMailStreams(nc);

// Names this process in leases, so two broadcast processes never work one broadcast at once.
const owner = `broadcast-${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
// Workspaces, senders and usage from the accounts unit; contacts and suppressions from the
// audience unit, whose AudienceService resolves audiences (DESIGN §9.4).
const directory = new DirectoryClient({
  accounts: connectClient(AccountsService, config.urls.accounts),
  contacts: connectClient(ContactService, config.urls.audience),
  audiences: connectClient(AudienceService, config.urls.audience),
});
const queue = new DeliveryJobPublisher(jetstream(nc));
// Compiled content for delivery, written before any page or test job (DESIGN §9.1).
const content = await ContentStore.open(nc, { replicas: config.natsReplicas });
// BROADCAST_STARTED / BROADCAST_COMPLETED webhook events (DESIGN §9.2).
const broadcastEvents = new PublishedBroadcastEvents(new WebhookEventPublisher(jetstream(nc)));
const sender = new Sender(
  // Each step that sends in a trace of its own, linked to the request that scheduled the broadcast.
  { ...repos, directory, queue, deliveryContent: content, clock: systemClock, logger, events: broadcastEvents, stepScope: sendingStepScope },
  { owner, intervalMs: settings.senderIntervalMs, leaseMs: settings.leaseMs },
);
const broadcasts = new Broadcasts({
  ...repos,
  directory,
  renderer: new RendererClient(connectClient(RendererService, config.urls.renderer)),
  queue,
  deliveryContent: content,
  clock: systemClock,
  logger,
  ids: { broadcastId: () => newId("cmp"), unique: () => newId("v").slice(2), messageId: newMessageId },
  onScheduled: () => sender.wake(),
  abMinWaitSeconds: settings.abMinWaitSeconds,
  onWinnerChosen: () => sender.wake(),
});
sender.start();
const events = await consumeBroadcastEvents(
  nc,
  { broadcasts: repos.broadcasts, pages: repos.pages, ledger: repos.ledger, timeline: repos.timeline, deliveryContent: content, clock: systemClock, logger, events: broadcastEvents },
  logger,
);

const server = await startConnectServer({
  routes: (router) => {
    broadcastRoutes(broadcasts)(router);
    // Pre-send checks (DESIGN §10.5): links fetched through the webhooks' SSRF guard, SpamAssassin when there is one.
    preSendCheck({ broadcasts, directory, settings, logger })(router);
  },
  port: config.servicePort ?? defaultServicePort(config, "broadcast"),
  host: config.serviceHost,
  // Changes made for the API, the console and the CLI go to the audit log (AUDIT stream).
  audit: bufferedAuditSink(new AuditPublisher(nc, logger), logger),
  logger,
  healthy: () => !nc.isClosed(),
});
logger.info({ url: server.url, store: store.kind }, "broadcast listening");

onShutdown(logger, async () => {
  await server.close();
  await sender.stop();
  await events.stop();
  await nc.drain();
  await store.close();
});
