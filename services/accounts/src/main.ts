import { startTracing } from "@mailroom/kit/tracing.js";
import { readFile } from "node:fs/promises";
import { connectClient, connectNats, createLogger, defaultServicePort, loadConfig, onShutdown, startConnectServer } from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { AuditPublisher } from "@mailroom/pipeline/audit.js";
import { bufferedAuditSink } from "@mailroom/kit/audit.js";
import { openStore, openStoreIfPresent } from "@mailroom/store/open.js";
import { secretKeysOf } from "@mailroom/kit/secrets.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { ChangePublisher } from "@mailroom/records/change-publisher.js";
import { adoptPreSplitStore, PRE_SPLIT_UNIT } from "@mailroom/records/adopt.js";
import { createAccounts } from "./domain/accounts.js";
import { eventsOfIntent } from "./domain/changes.js";
import { ACCOUNTS_COLLECTIONS, openAccountsStores } from "./adapters/store.js";
import { createResolver, createSendingDns, generateDkimKeyPair } from "./adapters/dns.js";
import { AudienceClient } from "./adapters/audience-client.js";
import { accountsRoutes } from "./routes.js";
import { TemplatePreviews } from "./domain/template-previews.js";
import { templateRoutes } from "./template-routes.js";
import { loadAccountsSettings } from "./settings.js";
import { Team } from "./domain/team.js";
import { AuditLog } from "./domain/audit-log.js";
import { MemberStore } from "./adapters/member-store.js";
import { SessionStore, TeamTokenStore } from "./adapters/team-store.js";
import { AuditLogStore } from "./adapters/audit-log-store.js";
import { teamRoutes } from "./team-routes.js";
import { consumeAuditLog } from "./audit-consumer.js";

const config = loadConfig();
const settings = loadAccountsSettings();
const logger = createLogger("accounts", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("accounts");
// Member and workspace changes are announced on NATS; the unit serves without it (events wait for it).
const nats = connectNats(config.natsUrl, "accounts", { waitOnFirstConnect: true });
nats.catch((err) => logger.warn({ err }, "NATS unavailable: changes are stored but not announced"));
const storeOptions = { dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool };
const store = await openStore({ ...storeOptions, service: "accounts" });
// A store written before the split (the directory unit's): this unit's collections, copied once.
await adoptPreSplitStore({
  target: store,
  openSource: () => openStoreIfPresent({ ...storeOptions, service: PRE_SPLIT_UNIT }),
  collections: ACCOUNTS_COLLECTIONS,
  logger,
});
// Member and workspace changes → DIRECTORY_EVENTS (webhooks); recorded first, published when NATS is there.
const changes = ChangePublisher.open(store, nats.then(async (nc) => (await ensureMailStreams(nc, config.natsReplicas), nc)), logger);
const repositories = await openAccountsStores(store, secretKeysOf(config));
// Writes cut short by the previous process's end: their events, rebuilt from the store.
const rebuild = (intent: Parameters<typeof eventsOfIntent>[0]) => eventsOfIntent(intent, repositories);
await changes.recover(rebuild).catch((err) => logger.warn({ err }, "recovering write intents failed; the sweep retries"));
changes.startSweep();
// The audience unit: contacts for template previews, a bootstrap document's contacts.
const audience = new AudienceClient(connectClient(ContactService, config.urls.audience));
const resolver = createResolver(settings.dnsServers);
const accounts = createAccounts({
  repositories,
  resolver,
  sendingDns: createSendingDns(resolver),
  generateDkimKey: generateDkimKeyPair,
  dns: { spfInclude: settings.spfInclude, inboundMxHost: settings.inboundMxHost, bounceDomain: settings.bounceDomain },
  contactBootstrap: audience,
  publishChanges: changes.publish,
  intendChanges: changes.intend,
});

// The team (DESIGN §9.9): members with roles, invitations, sign-in, sessions; same unit and store.
const team = new Team({
  members: await MemberStore.open(store),
  tokens: await TeamTokenStore.open(store),
  sessions: await SessionStore.open(store),
  workspaces: accounts.workspaces,
  secrets: secretKeysOf(config),
  publishChanges: changes.publish,
});
// Every unit's audit entries (the AUDIT stream) → the audit_log collection, kept a year.
const auditLog = new AuditLog(await AuditLogStore.open(store));

const auditEntries = nats.then(async (nc) => {
  await ensureMailStreams(nc, config.natsReplicas);
  return consumeAuditLog(nc, auditLog, logger);
});
auditEntries.catch((err) => logger.warn({ err }, "audit log consumer not started"));

// The bootstrap document, before serving (a caller never meets a key it names unknown): its
// contacts go to the audience unit, which may start after this one (each try checks the whole
// document first, so a refusal writes nothing).
if (settings.bootstrapFile) {
  const json = await readFile(settings.bootstrapFile, "utf8").catch((err: Error) => {
    logger.fatal({ file: settings.bootstrapFile, reason: err.message }, "cannot read MAILROOM_BOOTSTRAP");
    process.exit(1);
  });
  const deadline = Date.now() + 90_000;
  for (let attempt = 1; ; attempt++) {
    try {
      const ids = await accounts.bootstrap.loadJson(json);
      logger.info({ workspaces: ids, file: settings.bootstrapFile }, "bootstrap loaded");
      break;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === "service_unavailable" && Date.now() < deadline) {
        if (attempt === 1) logger.info("bootstrap waits for the audience unit");
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      }
      logger.fatal({ file: settings.bootstrapFile, reason: (err as Error).message }, "cannot load MAILROOM_BOOTSTRAP");
      process.exit(1);
    }
  }
}

const server = await startConnectServer({
  routes: (router) => {
    accountsRoutes(accounts, team)(router);
    teamRoutes(team, auditLog)(router);
    // Templates, their previews and version history (DESIGN §10.2): their own service, same unit and store.
    templateRoutes(accounts.templates, new TemplatePreviews(accounts.templates, audience, accounts.workspaces), accounts.workspaces)(router);
  },
  port: config.servicePort ?? defaultServicePort(config, "accounts"),
  host: config.serviceHost,
  // Changes made for the API, the console and the CLI go to the audit log (AUDIT stream).
  audit: bufferedAuditSink(nats.then((nc) => new AuditPublisher(nc, logger)), logger),
  logger,
});
logger.info({ url: server.url, store: store.kind }, "accounts listening");

onShutdown(logger, async () => {
  await server.close();
  // Leased usage goes back to the monthly counters while the store is still open.
  await accounts.usage.close();
  await Promise.race([changes.stop(), new Promise((resolve) => setTimeout(resolve, 1_000))]);
  await Promise.race([auditEntries.then((loop) => loop.stop()), new Promise((resolve) => setTimeout(resolve, 1_000))]).catch(() => {});
  await store.close();
  // Not yet connected: closing waits for nothing (the pending connect is abandoned with the process).
  await Promise.race([nats.then((nc) => nc.drain()), new Promise((resolve) => setTimeout(resolve, 1_000))]);
});
