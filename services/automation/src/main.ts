/** Wiring only: config → adapters → domain → transports (Connect routes, JetStream consumers, the claim loop). */
import { startTracing } from "@mailroom/kit/tracing.js";
import { jetstream } from "@nats-io/jetstream";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { BroadcastService } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { connectClient, connectNats, createLogger, defaultServicePort, loadConfig, newId, onShutdown, startConnectServer } from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { AuditPublisher } from "@mailroom/pipeline/audit.js";
import { bufferedAuditSink } from "@mailroom/kit/audit.js";
import { WebhookEventPublisher } from "@mailroom/pipeline/webhook-events.js";
import { openStore } from "@mailroom/store/open.js";
import { systemClock } from "@mailroom/kit/clock.js";
import { StoreCatalog } from "./adapters/catalog-store.js";
import { ContactDirectoryClient } from "./adapters/contacts.js";
import { AutomationDirectoryClient } from "./adapters/directory.js";
import { EmailClient } from "./adapters/email.js";
import { CollectionRunStore } from "./adapters/run-store.js";
import { RunWebhookEvents } from "./adapters/webhook-events.js";
import { Automations } from "./domain/automations.js";
import { Enrolment } from "./domain/enrol.js";
import { Runner } from "./domain/runner.js";
import { AnnouncementSweep, Exits, Runs } from "./domain/runs.js";
import { startConsumers } from "./consumers.js";
import { automationRoutes } from "./routes.js";
import { loadAutomationSettings } from "./settings.js";

const config = loadConfig();
const settings = loadAutomationSettings();
const logger = createLogger("automation", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("automation");

const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool, service: "automation" });
const catalog = new StoreCatalog(store);
await catalog.init();
const runStore = new CollectionRunStore(store);
await runStore.init();
const nc = await connectNats(config.natsUrl, "automation");
await ensureMailStreams(nc);

// Contacts and groups from the audience unit; workspaces and templates from the accounts unit.
const contactClient = connectClient(ContactService, config.urls.audience);
const groupClient = connectClient(GroupService, config.urls.audience);
const contacts = new ContactDirectoryClient(connectClient(AccountsService, config.urls.accounts), contactClient, groupClient);
const mailer = new EmailClient(connectClient(EmailService, config.urls.email), settings.sendBatch);
const events = new RunWebhookEvents(new WebhookEventPublisher(jetstream(nc)));
const exits = new Exits(runStore, events, systemClock, logger);
const runs = new Runs(runStore, exits, systemClock);
const automations = new Automations({
  repo: catalog,
  directory: new AutomationDirectoryClient(
    connectClient(TemplateService, config.urls.accounts),
    contactClient,
    groupClient,
    connectClient(BroadcastService, config.urls.broadcast),
  ),
  runs,
  clock: systemClock,
  newId: () => newId("aut"),
});

const runner = new Runner(
  { runs: runStore, catalog, contacts, mailer, exits, clock: systemClock, logger },
  { intervalMs: settings.claimIntervalMs, leaseMs: settings.leaseMs, concurrency: settings.concurrency },
);
runner.start();
const sweep = new AnnouncementSweep(runStore, exits, systemClock, logger);
sweep.start();
const enrolment = new Enrolment({ runs: runStore, catalog, contacts, mailer, exits, events, clock: systemClock, logger });
const consumers = await startConsumers(nc, enrolment, logger, { concurrency: settings.concurrency });

const server = await startConnectServer({
  routes: automationRoutes(automations),
  port: config.servicePort ?? defaultServicePort(config, "automation"),
  host: config.serviceHost,
  // Changes made for the API, the console and the CLI go to the audit log (AUDIT stream).
  audit: bufferedAuditSink(new AuditPublisher(nc, logger), logger),
  logger,
  healthy: () => !nc.isClosed(),
});
logger.info({ url: server.url, store: store.kind }, "automation listening");

onShutdown(logger, async () => {
  await server.close();
  await Promise.all(consumers.map((c) => c.stop()));
  sweep.stop();
  await runner.stop();
  await nc.drain();
  await store.close();
});
