import { startTracing } from "@mailroom/kit/tracing.js";
import { readFile } from "node:fs/promises";
import { connectNats, createLogger, defaultServicePort, loadConfig, onShutdown, startConnectServer } from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { AuditPublisher } from "@mailroom/pipeline/audit.js";
import { bufferedAuditSink } from "@mailroom/kit/audit.js";
import { openStore } from "@mailroom/store/open.js";
import { secretKeysOf } from "@mailroom/kit/secrets.js";
import { createDirectory } from "./domain/directory.js";
import { openStoreRepositories } from "./adapters/store.js";
import { createResolver, createSendingDns, generateDkimKeyPair } from "./adapters/dns.js";
import { natsContactEventPublisher } from "./adapters/event-publisher.js";
import { ChangePublisher } from "@mailroom/records/change-publisher.js";
import { directoryRoutes } from "./routes.js";
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
import { TemplatePreviews } from "./domain/template-previews.js";
import { templateRoutes } from "./template-routes.js";
import { EmittingGroupMembershipStore } from "./domain/changes.js";
import { GroupMembershipStore, GroupStore } from "./adapters/group-store.js";
import { loadDirectorySettings } from "./settings.js";
import { Team } from "./domain/team.js";
import { AuditLog } from "./domain/audit-log.js";
import { MemberStore } from "./adapters/member-store.js";
import { SessionStore, TeamTokenStore } from "./adapters/team-store.js";
import { AuditLogStore } from "./adapters/audit-log-store.js";
import { teamRoutes } from "./team-routes.js";
import { consumeAuditLog } from "./audit-consumer.js";

const config = loadConfig();
const settings = loadDirectorySettings();
const logger = createLogger("directory", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("directory");
// Contact events are announced on NATS; the directory serves without it (events wait for it).
const nats = connectNats(config.natsUrl, "directory", { waitOnFirstConnect: true });
nats.catch((err) => logger.warn({ err }, "NATS unavailable: contact events are stored but not announced"));
const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool, service: "directory" });
// Contact, property and member changes → DIRECTORY_EVENTS (webhooks); recorded first, published when NATS is there.
const changes = ChangePublisher.open(store, nats.then(async (nc) => (await ensureMailStreams(nc, config.natsReplicas), nc)), logger);
const repositories = await openStoreRepositories(store, secretKeysOf(config));
// Writes cut short by the previous process's end: their events, rebuilt from the store.
await changes.recover(repositories).catch((err) => logger.warn({ err }, "recovering write intents failed; the sweep retries"));
changes.startSweep();
const resolver = createResolver(settings.dnsServers);
const directory = createDirectory({
  repositories,
  resolver,
  sendingDns: createSendingDns(resolver),
  generateDkimKey: generateDkimKeyPair,
  dns: { spfInclude: settings.spfInclude, inboundMxHost: settings.inboundMxHost, bounceDomain: settings.bounceDomain },
  publishEvent: natsContactEventPublisher(nats, logger),
  publishChanges: changes.publish,
  intendChanges: changes.intend,
});

const topics = new Topics(await TopicStore.open(store), directory.workspaces);
// The one filter compiler (DESIGN §9.4): contact listing, export, segments and audiences; engagement records feed `$engagement`.
const contactFilters = await ContactFilters.open(store);

// Groups and contacts' memberships (DESIGN §9.4): their own service, same unit and store; joins and leaves emit CONTACT_TAG_*.
const groups = new Groups(
  await GroupStore.open(store),
  new EmittingGroupMembershipStore(await GroupMembershipStore.open(store), changes.publish, changes.intend),
  directory.workspaces,
);

// Segments and broadcast audiences (DESIGN §9.4): their own service, same unit and store.
const audienceStore = await AudienceStore.open(store, contactFilters.compileContactFilter);
const segments = new Segments(await SegmentStore.open(store), audienceStore, directory.workspaces);
const audiences = new Audiences(audienceStore, audienceStore, segments, directory.workspaces);

// The team (DESIGN §9.9): members with roles, invitations, sign-in, sessions; same unit and store.
const team = new Team({
  members: await MemberStore.open(store),
  tokens: await TeamTokenStore.open(store),
  sessions: await SessionStore.open(store),
  workspaces: directory.workspaces,
  secrets: secretKeysOf(config),
  publishChanges: changes.publish,
});
// Every unit's audit entries (the AUDIT stream) → the audit_log collection, kept a year.
const auditLog = new AuditLog(await AuditLogStore.open(store));

if (settings.bootstrapFile) {
  try {
    const ids = await directory.bootstrap.loadJson(await readFile(settings.bootstrapFile, "utf8"));
    logger.info({ workspaces: ids, file: settings.bootstrapFile }, "bootstrap loaded");
  } catch (err) {
    logger.fatal({ file: settings.bootstrapFile, reason: (err as Error).message }, "cannot load MAILROOM_BOOTSTRAP");
    process.exit(1);
  }
}

// Bounces, complaints and unsubscribes → suppressions and contact status, once NATS is there.
const outcomeEvents = nats.then(async (nc) => {
  await ensureMailStreams(nc, config.natsReplicas);
  return consumeMailOutcomes(nc, directory.outcomes, logger);
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

const auditEntries = nats.then(async (nc) => {
  await ensureMailStreams(nc, config.natsReplicas);
  return consumeAuditLog(nc, auditLog, logger);
});
auditEntries.catch((err) => logger.warn({ err }, "audit log consumer not started"));

// Signup forms with double opt-in (DESIGN §9.4): their own service, same unit and store.
const forms = await openForms(store, directory, { groups });

const server = await startConnectServer({
  routes: (router) => {
    directoryRoutes(directory, contactFilters.compileContactFilter, team)(router);
    teamRoutes(team, auditLog)(router);
    groupRoutes(groups)(router);
    // Template previews and version history (DESIGN §10.2): their own service, same unit and store.
    templateRoutes(directory.templates, new TemplatePreviews(directory.templates, directory.contacts, directory.workspaces))(router);
    audienceRoutes(segments, audiences, contactFilters.engagement)(router);
    formRoutes(forms)(router);
    // Topics and contacts' choices (DESIGN §9.4): their own service, same unit and store.
    topicRoutes(topics)(router);
  },
  port: config.servicePort ?? defaultServicePort(config, "directory"),
  host: config.serviceHost,
  // Changes made for the API, the console and the CLI go to the audit log (AUDIT stream).
  audit: bufferedAuditSink(nats.then((nc) => new AuditPublisher(nc, logger)), logger),
  logger,
});
logger.info({ url: server.url, store: store.kind }, "directory listening");

onShutdown(logger, async () => {
  await server.close();
  // Leased usage goes back to the monthly counters while the store is still open.
  await directory.usage.close();
  await Promise.race([changes.stop(), new Promise((resolve) => setTimeout(resolve, 1_000))]);
  await Promise.race([outcomeEvents.then((loop) => loop.stop()), new Promise((resolve) => setTimeout(resolve, 1_000))]).catch(() => {});
  await Promise.race([engagementEvents.then((loop) => loop.stop()), new Promise((resolve) => setTimeout(resolve, 1_000))]).catch(() => {});
  await Promise.race([auditEntries.then((loop) => loop.stop()), new Promise((resolve) => setTimeout(resolve, 1_000))]).catch(() => {});
  await store.close();
  // Not yet connected: closing waits for nothing (the pending connect is abandoned with the process).
  await Promise.race([nats.then((nc) => nc.drain()), new Promise((resolve) => setTimeout(resolve, 1_000))]);
});
