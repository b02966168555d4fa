import { createHash, randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import type { Logger } from "pino";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import type { Config } from "../../kit/src/config.js";
import { connectClient } from "../../kit/src/connect.js";
import { redactUrl } from "../../kit/src/logger.js";
import type { Store } from "../../kit/src/store/port.js";
import { BroadcastService } from "../../../gen/mailroom/broadcast/v1/broadcast_pb.js";
import { DirectoryService } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import { EmailService } from "../../../gen/mailroom/email/v1/email_pb.js";
import { DeliveryAdmin } from "./admin.js";
import { CaptureStore } from "./capture.js";
import { startDeliveryConsumer, type DeliveryConsumer } from "./consumer.js";
import { CachedContentSource, RpcContentSource } from "./content-source.js";
import { Deliverer } from "./deliverer.js";
import { JetStreamEventPublisher } from "./events.js";
import { RendererMerger } from "./merger.js";
import { Pacer } from "./pacer.js";
import { KvPacingRepository } from "./pacing-kv.js";
import type {
  ContentMerger,
  ContentSource,
  DeliveriesRepository,
  EventPublisher,
  MailTransport,
  PacingRepository,
  SenderDirectory,
} from "./repositories.js";
import { RpcSenderDirectory } from "./sender-directory.js";
import type { DeliverySettings } from "./settings.js";
import { StoreDeliveries } from "./store.js";
import { CaptureTransport, SmtpPoolTransport } from "./transport.js";

/** Any repository may be replaced (tests, benchmarks); the rest are built from config. */
export interface DeliveryOverrides {
  deliveries?: DeliveriesRepository;
  content?: ContentSource;
  merger?: ContentMerger;
  directory?: SenderDirectory;
  transport?: MailTransport;
  events?: EventPublisher;
  pacing?: PacingRepository;
}

export interface DeliveryRuntime {
  admin: DeliveryAdmin;
  deliverer: Deliverer;
  consumer: DeliveryConsumer;
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

/** Builds the repositories and the domain, and starts consuming delivery jobs. */
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
  const capture = config.smtpUrl ? undefined : new CaptureStore(path.join(config.dataDir, "captured"));
  const transport =
    o.transport ??
    (config.smtpUrl
      ? new SmtpPoolTransport(
          {
            url: config.smtpUrl,
            poolSize: settings.poolSize,
            maxMessagesPerConnection: settings.maxMessagesPerConnection,
            timeoutMs: settings.smtpTimeoutMs,
            tlsRejectUnauthorized: settings.tlsRejectUnauthorized,
            requireTls: settings.requireTls,
            ignoreTls: settings.ignoreTls,
          },
          redactUrl(config.smtpUrl),
        )
      : new CaptureTransport(capture!));
  const pacing = o.pacing ?? (await KvPacingRepository.open(nc, logger));
  const pacer = new Pacer(pacing, { key: relayKey(config.smtpUrl), rate: settings.relayRate });
  const deliverer = new Deliverer(
    {
      deliveries,
      content:
        o.content ??
        new CachedContentSource(
          new RpcContentSource(connectClient(EmailService, config.urls.email), connectClient(BroadcastService, config.urls.broadcast)),
          settings.contentCacheBytes,
        ),
      merger: o.merger ?? new RendererMerger(),
      directory: o.directory ?? new RpcSenderDirectory(connectClient(DirectoryService, config.urls.directory), settings.senderCacheMs),
      transport,
      events: o.events ?? new JetStreamEventPublisher(jetstream(nc)),
      pacer,
      logger,
    },
    {
      workerId,
      maxAttempts: settings.maxAttempts,
      retryBaseMs: settings.retryBaseMs,
      retryMaxMs: settings.retryMaxMs,
      pauseRecheckMs: settings.pauseRecheckMs,
      claimTtlMs: settings.ackWaitMs,
      secret: config.secret,
      publicUrl: config.publicUrl,
    },
  );
  const consumer = await startDeliveryConsumer(nc, deliverer, {
    concurrency: settings.concurrency,
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
  });
  logger.info({ relay: transport.description, concurrency: settings.concurrency, workerId }, "delivery consumer started");
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

/** Shared buckets are per relay host, never keyed by credentials. */
function relayKey(smtpUrl: string | undefined): string {
  if (!smtpUrl) return "capture";
  let hostPort = smtpUrl;
  try {
    const u = new URL(smtpUrl);
    hostPort = `${u.hostname}:${u.port}`;
  } catch {
    // keep the raw string; only its hash is used
  }
  return createHash("sha256").update(hostPort).digest("hex").slice(0, 16);
}
