import { startTracing } from "@mailroom/kit/tracing.js";
import { connectClient, connectNats, createLogger, defaultServicePort, loadConfig, onShutdown, startConnectServer } from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { AuditPublisher } from "@mailroom/pipeline/audit.js";
import { bufferedAuditSink } from "@mailroom/kit/audit.js";
import { openStore, openStoreIfPresent } from "@mailroom/store/open.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ChangePublisher } from "@mailroom/records/change-publisher.js";
import { adoptPreSplitStore, PRE_SPLIT_UNIT } from "@mailroom/records/adopt.js";
import { createAudience } from "./domain/audience.js";
import { eventsOfIntent } from "./domain/changes.js";
import { AUDIENCE_COLLECTIONS, openAudienceStores } from "./adapters/store.js";
import { AccountsClient } from "./adapters/accounts-client.js";
import { natsContactEventPublisher } from "./adapters/event-publisher.js";
import { contactRoutes } from "./contact-routes.js";
import { formRoutes, openForms } from "./form-routes.js";
import { topicRoutes } from "./topic-routes.js";
import { Topics } from "./domain/topics.js";
import { TopicStore } from "./adapters/topic-store.js";
import { consumeMailOutcomes } from "./consumers.js";
import { audienceRoutes } from "./audience-routes.js";
import { AudienceStore } from "./adapters/audience-store.js";
import { SegmentStore } from "./adapters/segment-store.js";
import { Segments } from "./domain/segments.js";
import { Audiences } from "./domain/audiences.js";
import { ContactFilters } from "./adapters/contact-filter.js";
import { HISTORY_DAYS } from "./domain/best-hour.js";
import { consumeEngagement } from "./engagement-consumers.js";
import { groupRoutes } from "./group-routes.js";
import { Groups } from "./domain/groups.js";
import { EmittingGroupMembershipStore } from "./domain/changes.js";
import { GroupMembershipStore, GroupStore } from "./adapters/group-store.js";

const config = loadConfig();
const logger = createLogger("audience", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("audience");
// Contact events are announced on NATS; the unit serves without it (events wait for it).
const nats = connectNats(config.natsUrl, "audience", { waitOnFirstConnect: true });
nats.catch((err) => logger.warn({ err }, "NATS unavailable: contact events are stored but not announced"));
const storeOptions = { dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool };
const store = await openStore({ ...storeOptions, service: "audience" });
// A store written before the split (the directory unit's): this unit's collections, copied once.
await adoptPreSplitStore({
  target: store,
  openSource: () => openStoreIfPresent({ ...storeOptions, service: PRE_SPLIT_UNIT }),
  collections: AUDIENCE_COLLECTIONS,
  logger,
});
// Contact, property, group and suppression changes → DIRECTORY_EVENTS (webhooks); recorded first, published when NATS is there.
const changes = ChangePublisher.open(store, nats.then(async (nc) => (await ensureMailStreams(nc, config.natsReplicas), nc)), logger);
const repositories = await openAudienceStores(store);
// Writes cut short by the previous process's end: their events, rebuilt from the store.
const rebuild = (intent: Parameters<typeof eventsOfIntent>[0]) => eventsOfIntent(intent, repositories);
await changes.recover(rebuild).catch((err) => logger.warn({ err }, "recovering write intents failed; the sweep retries"));
changes.startSweep();
// The accounts unit: workspaces (remembered a few seconds), senders, templates and usage.
const accounts = new AccountsClient(connectClient(AccountsService, config.urls.accounts), connectClient(TemplateService, config.urls.accounts));
const audience = createAudience({
  repositories,
  workspaces: accounts,
  usage: accounts,
  publishEvent: natsContactEventPublisher(nats, logger),
  publishChanges: changes.publish,
  intendChanges: changes.intend,
});

const topics = new Topics(await TopicStore.open(store), accounts);
// The one filter compiler (DESIGN §9.4): contact listing, export, segments and audiences; engagement records feed `$engagement`.
const contactFilters = await ContactFilters.open(store);

// Groups and contacts' memberships (DESIGN §9.4): their own service, same unit and store; joins and leaves emit CONTACT_TAG_*.
const groups = new Groups(
  await GroupStore.open(store),
  new EmittingGroupMembershipStore(await GroupMembershipStore.open(store), changes.publish, changes.intend),
  accounts,
);

// Segments and broadcast audiences (DESIGN §9.4): their own service, same unit and store.
const audienceStore = await AudienceStore.open(store, contactFilters.compileContactFilter);
const segments = new Segments(await SegmentStore.open(store), audienceStore, accounts);
const audiences = new Audiences(audienceStore, audienceStore, segments, accounts);

// Bounces, complaints and unsubscribes → suppressions and contact status, once NATS is there.
const outcomeEvents = nats.then(async (nc) => {
  await ensureMailStreams(nc, config.natsReplicas);
  return consumeMailOutcomes(nc, audience.outcomes, logger);
});
outcomeEvents.catch((err) => logger.warn({ err }, "mail outcome consumer not started"));
// Delivered, opened, clicked and bounced → engagement records (the filter's `$engagement`).
const engagementEvents = nats.then(async (nc) => {
  await ensureMailStreams(nc, config.natsReplicas);
  return consumeEngagement(nc, { contacts: repositories.contacts, engagement: contactFilters.engagement }, logger);
});
engagementEvents.catch((err) => logger.warn({ err }, "engagement consumer not started"));
// OPTIMAL broadcasts' best hours read each contact's recent opens and clicks: those recorded
// before they were kept are added once, in the background (a restart resumes; done: nothing).
contactFilters.engagement.backfillRecent(new Date(), HISTORY_DAYS).then(
  (done) => done && logger.info(done, "recent opens and clicks of earlier records added (best hours)"),
  (err) => logger.warn({ err }, "adding earlier opens and clicks failed; the next start carries on"),
);

// Signup forms with double opt-in (DESIGN §9.4): their own service, same unit and store.
const forms = await openForms(store, { ...audience, senders: accounts, templates: accounts.templateLookup }, { groups });

const server = await startConnectServer({
  routes: (router) => {
    contactRoutes(audience, contactFilters.compileContactFilter)(router);
    groupRoutes(groups)(router);
    audienceRoutes(segments, audiences, contactFilters.engagement)(router);
    formRoutes(forms)(router);
    // Topics and contacts' choices (DESIGN §9.4): their own service, same unit and store.
    topicRoutes(topics)(router);
  },
  port: config.servicePort ?? defaultServicePort(config, "audience"),
  host: config.serviceHost,
  // Changes made for the API, the console and the CLI go to the audit log (AUDIT stream).
  audit: bufferedAuditSink(nats.then((nc) => new AuditPublisher(nc, logger)), logger),
  logger,
});
logger.info({ url: server.url, store: store.kind }, "audience listening");

onShutdown(logger, async () => {
  await server.close();
  await Promise.race([changes.stop(), new Promise((resolve) => setTimeout(resolve, 1_000))]);
  await Promise.race([outcomeEvents.then((loop) => loop.stop()), new Promise((resolve) => setTimeout(resolve, 1_000))]).catch(() => {});
  await Promise.race([engagementEvents.then((loop) => loop.stop()), new Promise((resolve) => setTimeout(resolve, 1_000))]).catch(() => {});
  await store.close();
  // Not yet connected: closing waits for nothing (the pending connect is abandoned with the process).
  await Promise.race([nats.then((nc) => nc.drain()), new Promise((resolve) => setTimeout(resolve, 1_000))]);
});
