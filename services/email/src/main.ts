/** Wiring only: config → adapters → domain → transports (Connect routes, JetStream consumer). */
import { startTracing } from "@mailroom/kit/tracing.js";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
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
import { superviseWorkers } from "@mailroom/kit/workers.js";
import { ContentStore } from "@mailroom/pipeline/content-store.js";
import { DeliveryJobPublisher } from "@mailroom/pipeline/delivery-jobs.js";
import { WebhookEventPublisher } from "@mailroom/pipeline/webhook-events.js";
import { systemClock } from "@mailroom/kit/clock.js";
import { openStores } from "./adapters/store.js";
import { QueueWithSentEvents } from "./adapters/queue.js";
import { DirectoryClient } from "./adapters/directory.js";
import { InProcessRenderer } from "./adapters/renderer.js";
import { scheduledSendScope } from "./adapters/tracing.js";
import { Emails } from "./domain/service.js";
import { Scheduler } from "./domain/scheduler.js";
import { consumeMailEvents } from "./consumers.js";
import { emailRoutes } from "./routes.js";
import { loadEmailSettings } from "./settings.js";

const config = loadConfig();
const settings = loadEmailSettings();
const logger = createLogger("email", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("email");
/** One email service process: the whole unit, or one of its workers. */
async function serve(): Promise<void> {
  const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool, service: "email" });
  const { emails, idempotency, outcomes, stats } = await openStores(store, { contentRetentionHours: settings.contentRetentionHours });
  // Every send publishes: no stack captured per request for errors that almost never happen.
  const nc = await connectNats(config.natsUrl, "email", { noAsyncTraces: true });
  await ensureMailStreams(nc);

  // Names this process in publish claims, so two email services never publish one email.
  const owner = `email-${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
  // Each job, then its EMAIL_SENT webhook event (DESIGN §9.2), both deduplicated by id.
  const queue = new QueueWithSentEvents(new DeliveryJobPublisher(jetstream(nc)), new WebhookEventPublisher(jetstream(nc)));
  // Compiled content for delivery (DESIGN §9.1): carried by its job when small, else written before it.
  const content = await ContentStore.open(nc, { replicas: config.natsReplicas, inlineBytes: settings.inlineContentBytes });
  const service = new Emails({
    emails,
    idempotency,
    // Senders, templates and usage from the accounts unit; suppressions and contacts from the audience unit.
    directory: new DirectoryClient({
      accounts: connectClient(AccountsService, config.urls.accounts),
      templates: connectClient(TemplateService, config.urls.accounts),
      contacts: connectClient(ContactService, config.urls.audience),
    }),
    renderer: new InProcessRenderer({ secret: config.secret, publicUrl: config.publicUrl }),
    queue,
    content,
    stats,
    clock: systemClock,
    logger,
    ids: { emailId: () => newId("trs"), messageId: newMessageId },
    owner,
    claimLeaseMs: settings.claimLeaseMs,
  });
  const scheduler = new Scheduler(emails, queue, content, systemClock, logger, {
    owner,
    intervalMs: settings.schedulerIntervalMs,
    leaseMs: settings.claimLeaseMs,
    // Each release in a trace of its own, linked to the request that created the email.
    releaseScope: scheduledSendScope,
  });
  scheduler.start();
  const events = await consumeMailEvents(nc, { emails, outcomes, stats, clock: systemClock }, logger);

  const server = await startConnectServer({
    routes: emailRoutes(service),
    port: config.servicePort ?? defaultServicePort(config, "email"),
    host: config.serviceHost,
    // Changes made for the API, the console and the CLI go to the audit log (AUDIT stream).
    audit: bufferedAuditSink(new AuditPublisher(nc, logger), logger),
    logger,
    healthy: () => !nc.isClosed(),
    // The send path passes the request id on itself (jobs, failure logs): no promise hooks.
    asyncRequestContext: false,
  });
  logger.info({ url: server.url, store: store.kind }, "email listening");

  onShutdown(logger, async () => {
    await server.close();
    await scheduler.stop();
    await events.stop();
    await nc.drain();
    await store.close();
  });
}

if (!superviseWorkers(settings.workers, logger, config.exitWithParent)) await serve();
