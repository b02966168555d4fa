/** Wiring only: config → adapters → domain → transports (SMTP listener, Connect server, JetStream consumer). */
import { startTracing } from "@mailroom/kit/tracing.js";
import { jetstream } from "@nats-io/jetstream";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { WebhookEventPublisher } from "@mailroom/pipeline/webhook-events.js";
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
import { AccountsClient } from "./adapters/accounts-client.js";
import { AudienceClient } from "./adapters/audience-client.js";
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
import { StoreReceiving } from "./adapters/receiving-store.js";
import { ObjectStoreContents } from "./adapters/object-contents.js";
import { DnsMxLookup } from "./adapters/mx-lookup.js";
import { spamScorerFor } from "./adapters/spam-scorer.js";
import { EmailServiceForwarder } from "./adapters/forwarder.js";
import { StoreDmarcReports } from "./adapters/dmarc-store.js";
import { DmarcReportMailbox } from "./domain/dmarc/mailbox.js";
import { InboundRouting } from "./domain/receiving/routing.js";
import { InboundConfig } from "./domain/receiving/config.js";
import { Receiver } from "./domain/receiving/receiver.js";
import { receivingRoutes } from "./receiving-routes.js";
import { dmarcSummaryHandler } from "./dmarc-routes.js";

/** Other inbound processes' changes to domains and rules reach this one's routing within this long. */
const ROUTING_REFRESH_MS = 30_000;
/** The MX preference inbound domains are told to publish. */
const MX_PRIORITY = 10;

const config = loadConfig();
const settings = loadInboundSettings();
const logger = createLogger("inbound", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("inbound");
const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool, service: "inbound" });
const nc = await connectNats(config.natsUrl, "inbound");
await ensureMailStreams(nc);

const js = jetstream(nc);
const clock = { now: () => new Date() };
const sent = await StoreSentDeliveries.open(store, settings.rememberMs);
const events = new JetStreamMailEvents(js);

// Receiving (DESIGN §10.4): inbound domains and rules, received mail, DMARC reports.
const receiving = await StoreReceiving.open(store, settings.retentionMs);
const routing = new InboundRouting(receiving.domains, receiving.rules, logger);
await routing.start(ROUTING_REFRESH_MS);
const inboundConfig = new InboundConfig({
  domains: receiving.domains,
  rules: receiving.rules,
  routing,
  mx: new DnsMxLookup(settings.dnsServers),
  // A workspace claims an inbound domain it verified for sending (the accounts unit).
  sendingDomains: new AccountsClient(connectClient(AccountsService, config.urls.accounts)),
  clock,
  logger,
  mxHost: settings.inboundMxHost,
  mxPriority: MX_PRIORITY,
  reserved: [settings.inboundMxHost, ...(settings.bounceDomain ? [settings.bounceDomain] : [])],
});
const dmarcReports = await StoreDmarcReports.open(store);
const receiver = new Receiver({
  routing,
  received: receiving.received,
  contents: await ObjectStoreContents.open(nc, { retentionMs: settings.retentionMs, replicas: config.natsReplicas }),
  sent,
  events,
  webhooks: new WebhookEventPublisher(js),
  // Forwards go out through the email service, the envelope sender SRS-rewritten at the bounce domain.
  forwarder: new EmailServiceForwarder(connectClient(EmailService, config.urls.email), {
    secret: tokenSecretsOf(config),
    domain: settings.bounceDomain ?? settings.inboundMxHost,
  }),
  dmarc: new DmarcReportMailbox({ store: dmarcReports, hosts: [settings.inboundMxHost], clock, logger }),
  spam: spamScorerFor({ spamdUrl: settings.spamdUrl, maxBytes: settings.spamMaxBytes }),
  clock,
  logger,
});

const inbound = new InboundMail({
  sent,
  // Hard bounces, complaints and unsubscribes go to the audience unit's suppression list and contacts.
  suppressions: new AudienceClient(connectClient(ContactService, config.urls.audience)),
  events,
  clock,
  logger,
  policy: { secret: tokenSecretsOf(config), domains: settings.bounceDomain ? [settings.bounceDomain] : [] },
  receiver,
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
  routes: (router) => {
    inboundRoutes(webhooks, inbound)(router);
    receivingRoutes({
      config: inboundConfig,
      receiver,
      dmarcSummary: dmarcSummaryHandler({ reports: dmarcReports, inboundHost: settings.inboundMxHost, clock }).getDmarcSummary,
    })(router);
  },
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
  ratePerMinute: settings.ratePerMinute,
  logger,
});
logger.info({ port: smtp.port, host: config.serviceHost, bounceDomain: settings.bounceDomain ?? "(bounces.<sender domain>)" }, "inbound SMTP listening");

onShutdown(logger, async () => {
  routing.stop();
  await smtp.close();
  await server.close();
  await sentEvents.stop();
  await nc.drain();
  await store.close();
});
