/**
 * Wiring only: config → adapters → domain → transports (JetStream consumer, Connect admin).
 * `startDelivery` is the same wiring for an in-process delivery service (suites, bench).
 */
import { startTracing } from "@mailroom/kit/tracing.js";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { defaultServicePort, loadConfig, type Config } from "@mailroom/kit/config.js";
import { connectClient, onShutdown, startConnectServer } from "@mailroom/kit/connect.js";
import { connectNats, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { createLogger, type Logger } from "@mailroom/kit/logger.js";
import { openStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { ContentStore } from "@mailroom/pipeline/content-store.js";
import { DeliveryJobPublisher } from "@mailroom/pipeline/delivery-jobs.js";
import { MailEventPublisher } from "@mailroom/pipeline/mail-events.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { AuditPublisher } from "@mailroom/pipeline/audit.js";
import { bufferedAuditSink } from "@mailroom/kit/audit.js";
import { CaptureStore } from "./adapters/capture.js";
import { AttachmentParts } from "./adapters/attachment-parts.js";
import { CachedContentSource, StoreContentSource, sharedContentRef, type CompiledMessageSource } from "./adapters/content-source.js";
import { OutcomeEventPublisher } from "./adapters/events.js";
import { JetStreamRetryQueue } from "./adapters/retry-queue.js";
import { RendererMerger } from "./adapters/merger.js";
import { KvPacingStore } from "./adapters/pacing-kv.js";
import { SenderDirectoryClient } from "./adapters/sender-directory.js";
import { createDirectTransport, effectiveEhlo } from "./adapters/direct/index.js";
import { buildRoutes } from "./adapters/routes/build-routes.js";
import { RouteStats } from "./adapters/routes/route-stats.js";
import { RoutedTransport } from "./adapters/routes/routed-transport.js";
import { StoreDeliveries } from "./adapters/store.js";
import { startDeliveryConsumers } from "./consumers.js";
import { DeliveryAdmin } from "./domain/admin.js";
import { Deliverer } from "./domain/deliverer.js";
import { Pacer, relayKeyOf } from "./domain/pacer.js";
import type {
  ContentMerger,
  DeliveriesRepository,
  EventPublisher,
  MailTransport,
  PacingRepository,
  RetryQueue,
  SenderDirectory,
} from "./domain/ports.js";
import { deliveryRoutes } from "./routes.js";
import { prometheusDeliveryMetrics, recordRouteHealth, recordSmtpPoolSize } from "./adapters/metrics.js";
import { loadDeliverySettings, type DeliverySettings } from "./settings.js";

/** Any adapter may be replaced (tests, benchmarks); the rest are built from config. */
export interface DeliveryOverrides {
  deliveries?: DeliveriesRepository;
  content?: CompiledMessageSource;
  merger?: ContentMerger;
  directory?: SenderDirectory;
  transport?: MailTransport;
  events?: EventPublisher;
  retries?: RetryQueue;
  pacing?: PacingRepository;
}

export interface DeliveryRuntime {
  admin: DeliveryAdmin;
  deliverer: Deliverer;
  consumer: ConsumeLoop;
  transport: MailTransport;
  /** Stop pulling, finish or hand back in-flight jobs, close the SMTP pool and KV watches. */
  stop(): Promise<void>;
}

export interface DeliveryDependencies {
  config: Config;
  settings: DeliverySettings;
  logger: Logger;
  nc: NatsConnection;
  store: Store;
  overrides?: DeliveryOverrides;
}

/** Builds the adapters and the domain, and starts consuming delivery jobs. */
export async function startDelivery(deps: DeliveryDependencies): Promise<DeliveryRuntime> {
  const { config, settings, logger, nc, store } = deps;
  const o = deps.overrides ?? {};
  const workerId = `${os.hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;

  let deliveries = o.deliveries;
  if (!deliveries) {
    const repo = new StoreDeliveries(store);
    await repo.init();
    deliveries = repo;
  }
  const pacing = o.pacing ?? (await KvPacingStore.open(nc, logger));
  const capture = settings.routes.some((r) => r.kind === "capture") ? new CaptureStore(path.join(config.dataDir, "captured")) : undefined;
  const stats = new RouteStats();
  let routed: RoutedTransport | undefined;
  if (!o.transport) {
    const direct = settings.direct;
    const directTransport = direct
      ? () => createDirectTransport(direct, { logger, skeletonCacheEntries: settings.skeletonCacheEntries, timeoutMs: settings.smtpTimeoutMs })
      : undefined;
    routed = new RoutedTransport(buildRoutes(settings, { capture, pacing, direct: directTransport }), {
      downMs: settings.routeDownMs,
      downMaxMs: settings.routeDownMaxMs,
      downAfter: settings.routeDownAfter,
      logger,
      onHealth: recordRouteHealth,
    });
    for (const r of settings.routes) recordRouteHealth(r.name, true);
    const pooled = settings.routes.filter((r) => r.kind === "relay").reduce((sum, r) => sum + (r.poolSize ?? settings.poolSize), 0);
    if (pooled > 0) recordSmtpPoolSize(pooled);
  }
  const transport = o.transport ?? routed!;
  // MAILROOM_SMTP_RATE (one relay only; routes have their own `rate`), checked before the claim.
  const pacer = new Pacer(pacing, { key: relayKeyOf(settings.smtpUrl), rate: settings.relayRate });
  const js = jetstream(nc);
  // Content only from the content store the accepting unit wrote (DESIGN §9.1), broadcast
  // content cached: delivery never calls the email, broadcast or renderer service.
  const content =
    o.content ??
    new CachedContentSource(new StoreContentSource(await ContentStore.open(nc, { replicas: config.natsReplicas }), new AttachmentParts(settings.attachmentCacheBytes)), {
      maxBytes: settings.contentCacheBytes,
      maxEntries: settings.contentCacheEntries,
      cacheable: sharedContentRef,
    });
  const deliverer = new Deliverer(
    {
      deliveries,
      content,
      merger: o.merger ?? new RendererMerger(),
      // Sender checks from the accounts unit; other addresses' hard bounces suppressed in the audience unit.
      directory:
        o.directory ??
        new SenderDirectoryClient(
          { accounts: connectClient(AccountsService, config.urls.accounts), contacts: connectClient(ContactService, config.urls.audience) },
          settings.senderCacheMs,
        ),
      transport,
      events: o.events ?? new OutcomeEventPublisher(new MailEventPublisher(js)),
      retries: o.retries ?? new JetStreamRetryQueue(new DeliveryJobPublisher(js)),
      pacer,
      logger,
      metrics: {
        ...prometheusDeliveryMetrics,
        routeOutcome(route, domain, outcome, seconds) {
          prometheusDeliveryMetrics.routeOutcome(route, domain, outcome, seconds);
          stats.record(route, outcome, seconds * 1_000);
        },
      },
    },
    {
      workerId,
      maxAttempts: settings.maxAttempts,
      retryBaseMs: settings.retryBaseMs,
      retryMaxMs: settings.retryMaxMs,
      pauseRecheckMs: settings.pauseRecheckMs,
      // A claim older than the ack wait is a dead worker's: a live one's job heartbeats.
      claimTtlMs: settings.ackWaitMs,
      pageConcurrency: settings.pageConcurrency,
      secret: config.secret,
      publicUrl: config.publicUrl,
      bounceDomain: settings.bounceDomain,
    },
  );
  const consumer = await startDeliveryConsumers(nc, deliverer, {
    lanes: {
      transactional: { concurrency: settings.concurrency, maxAckPending: settings.maxAckPending },
      broadcast: { concurrency: settings.broadcastConcurrency, maxAckPending: settings.broadcastMaxAckPending },
    },
    ackWaitMs: settings.ackWaitMs,
    maxDeliver: settings.maxDeliver,
    shutdownGraceMs: settings.shutdownGraceMs,
    logger,
  });
  const admin = new DeliveryAdmin({
    pacing,
    capture,
    counters: deliverer.counters,
    relay: { description: transport.description, capturing: transport.capturing, rate: settings.relayRate },
    processId: workerId,
    mode: settings.mode,
    // The EHLO really sent: with no qualified name, the source address literal (or "" when the system picks the address).
    ...(settings.direct ? { direct: { ehloName: effectiveEhlo(settings.direct), localAddress: settings.direct.localAddress } } : {}),
    ...(routed ? { routes: () => routed.health().map((h) => ({ ...h, ...stats.of(h.name) })) } : {}),
  });
  logger.info(
    { relay: transport.description, mode: settings.mode, concurrency: settings.concurrency, broadcastConcurrency: settings.broadcastConcurrency, workerId },
    "delivery consumers started",
  );
  if (settings.unusedDirectVariables?.length) {
    logger.warn({ variables: settings.unusedDirectVariables }, `no route is direct, so ${settings.unusedDirectVariables.join(", ")} do nothing: unset them or add a direct route`);
  }
  return {
    admin,
    deliverer,
    consumer,
    transport,
    async stop() {
      await consumer.stop();
      await transport.close();
      await pacing.close();
    },
  };
}

/** The delivery process: NATS, store, the service above and its Connect admin server. */
async function runDeliveryProcess(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger("delivery", config.logLevel);
  // Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
  await startTracing("delivery");
  // Every job costs a few requests (ack, outcome publish): skip capturing a stack trace for each.
  const nc = await connectNats(config.natsUrl, "delivery", { noAsyncTraces: true });
  await ensureMailStreams(nc);
  const store = await openStore({ dataDir: config.dataDir, mongodbUrl: config.mongodbUrl, postgresUrl: config.postgresUrl, postgresPool: config.postgresPool, service: "delivery" });
  const delivery = await startDelivery({ config, settings: loadDeliverySettings(), logger, nc, store });
  const server = await startConnectServer({
    routes: deliveryRoutes(delivery.admin),
    port: config.servicePort ?? defaultServicePort(config, "delivery"),
    host: config.serviceHost,
    // Changes made for the API, the console and the CLI go to the audit log (AUDIT stream).
    audit: bufferedAuditSink(new AuditPublisher(nc, logger), logger),
    logger,
    healthy: () => !nc.isClosed(),
  });
  logger.info({ url: server.url }, "delivery service listening");

  onShutdown(logger, async () => {
    await delivery.stop(); // stop pulling, finish or hand back in-flight jobs, close the pool
    await server.close();
    await store.close();
    await nc.drain();
  });
}

/** Run as a program (not imported by a suite or the bench); argv[1] may be relative or a symlink. */
const isEntryPoint = process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntryPoint) await runDeliveryProcess();
