/**
 * Support for the delivery suites: a stand-in Connect server for the neighbours the delivery
 * service calls (the accounts and audience units — real Connect over HTTP, data from the test),
 * content written into the real content store, a MailEvent listener, job and page
 * publishing and configuration.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { create, fromBinary, type JsonObject } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { loadConfig, type Config } from "@mailroom/kit/config.js";
import { connectClient, startConnectServer, type ConnectServer } from "@mailroom/kit/connect.js";
import { openStore } from "@mailroom/store/open.js";
import type { Client } from "@connectrpc/connect";
import { DeliveryService } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { deliveryRoutes } from "../../services/delivery/src/routes.js";
import { startDelivery } from "../../services/delivery/src/main.js";
import { publishProto } from "@mailroom/kit/jetstream.js";
import { deliveryJobSubject, EVENTS_SUBJECTS, type DeliverySourceName } from "@mailroom/pipeline/subjects.js";
import { AccountsService, DkimKeySchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { ContentStore } from "@mailroom/pipeline/content-store.js";
import { DeliveryJobPublisher } from "@mailroom/pipeline/delivery-jobs.js";
import { variablesJson, type DeliveryPageSpec } from "@mailroom/pipeline/work.js";
import {
  DeliveryJobSchema,
  DeliverySource,
  MailEventSchema,
  MailEventType,
  type MailEvent,
} from "@mailroom/proto/events/v1/events_pb.js";
import type { CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { loadDeliverySettings, type DeliverySettings } from "../../services/delivery/src/settings.js";
import { silentLogger } from "../../services/delivery/src/testing.js";

export interface Neighbours {
  url: string;
  senders: Map<string, { address: string; name?: string; dkim?: { domain: string; selector: string; privateKeyPem: string } }>;
  suppressions: Array<{ workspaceId: string; email: string; reason: SuppressionReason; detail: string }>;
  stop(): Promise<void>;
}

/** One Connect server playing AccountsService (sender checks) and ContactService (hard-bounce suppressions). */
export async function startNeighbours(): Promise<Neighbours> {
  const n = {
    senders: new Map<string, { address: string; name?: string; dkim?: { domain: string; selector: string; privateKeyPem: string } }>(),
    suppressions: [] as Neighbours["suppressions"],
  };
  const routes = (router: ConnectRouter) => {
    router.service(AccountsService, {
      async checkSender(req) {
        const address = (/<([^>]+)>/.exec(req.from)?.[1] ?? req.from).trim();
        const s = n.senders.get(`${req.workspaceId}/${address.toLowerCase()}`);
        if (!s) return { allowed: false, address };
        return { allowed: true, address: s.address, name: s.name ?? "", dkim: s.dkim && create(DkimKeySchema, s.dkim) };
      },
    });
    router.service(ContactService, {
      async addSuppression(req) {
        n.suppressions.push({ workspaceId: req.workspaceId, email: req.email, reason: req.reason, detail: req.detail });
        return {};
      },
    });
  };
  const server: ConnectServer = await startConnectServer({ routes, logger: silentLogger });
  return Object.assign(n, { url: server.url, stop: () => server.close() });
}

/** Writes compiled content into the real content store, as the accepting unit does before it publishes jobs. */
export async function putContent(nc: NatsConnection, workspaceId: string, contentRef: string, compiled: CompiledMessage): Promise<void> {
  const store = await ContentStore.open(nc);
  await store.put(workspaceId, contentRef, compiled);
}

/** Writes every content of `contents` (keyed "<workspace>/<content ref>") into the content store. */
export async function putContents(nc: NatsConnection, contents: Map<string, CompiledMessage>): Promise<void> {
  const store = await ContentStore.open(nc);
  await Promise.all([...contents].map(([key, compiled]) => {
    const slash = key.indexOf("/");
    return store.put(key.slice(0, slash), key.slice(slash + 1), compiled);
  }));
}

/** Every MailEvent published on the events subjects, as they arrive. */
export function listenEvents(nc: NatsConnection) {
  const events: MailEvent[] = [];
  const sub = nc.subscribe(EVENTS_SUBJECTS);
  void (async () => {
    for await (const m of sub) events.push(fromBinary(MailEventSchema, m.data));
  })();
  return {
    events,
    of: (deliveryId: string) => events.filter((e) => e.deliveryId === deliveryId),
    async waitFor(pred: (e: MailEvent[]) => boolean, timeoutMs = 15_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!pred(events)) {
        if (Date.now() > deadline) throw new Error(`events did not arrive in ${timeoutMs} ms; got ${events.map((e) => `${e.deliveryId}:${MailEventType[e.type]}`).join(", ")}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    stop: () => sub.unsubscribe(),
  };
}

export interface JobInit {
  deliveryId: string;
  to: string;
  source?: DeliverySource;
  workspaceId?: string;
  contentRef?: string;
  broadcastId?: string;
  fromEmail?: string;
  fromName?: string;
  replyTo?: string;
  variables?: JsonObject;
  /** Write the merge values as the old Struct `variables` (a job from an older publisher). */
  structVariables?: boolean;
  subjectPrefix?: string;
}

const SOURCE_NAME: Record<number, DeliverySourceName> = {
  [DeliverySource.TRANSACTIONAL]: "transactional",
  [DeliverySource.BROADCAST]: "broadcast",
  [DeliverySource.BROADCAST_TEST]: "test",
};

export function deliveryJob(j: JobInit) {
  const source = j.source ?? DeliverySource.TRANSACTIONAL;
  return create(DeliveryJobSchema, {
    deliveryId: j.deliveryId,
    workspaceId: j.workspaceId ?? "ws_acme",
    source,
    messageId: `${j.deliveryId}@acme.test`,
    emailId: source === DeliverySource.TRANSACTIONAL ? "trs_1" : "",
    broadcastId: j.broadcastId ?? "",
    recipient: j.structVariables
      ? { email: j.to, contactId: `ctc_${j.deliveryId}`, variables: j.variables ?? { firstName: "Ann" } }
      : { email: j.to, contactId: `ctc_${j.deliveryId}`, variablesJson: variablesJson(j.variables ?? { firstName: "Ann" }) },
    fromEmail: j.fromEmail ?? "news@acme.test",
    fromName: j.fromName ?? "Acme",
    replyTo: j.replyTo ?? "",
    contentRef: j.contentRef ?? "email:trs_1",
    subjectPrefix: j.subjectPrefix ?? "",
  });
}

/** Publishes a job as the email and broadcast services do; msgID defaults to the delivery id. */
export async function publishJob(nc: NatsConnection, j: JobInit, msgID = j.deliveryId): Promise<void> {
  const job = deliveryJob(j);
  await publishProto(jetstream(nc), deliveryJobSubject(SOURCE_NAME[job.source], job.broadcastId), DeliveryJobSchema, job, msgID);
}

/** Publishes a broadcast's page job through the pipeline's one publisher, as the broadcast service does. */
export async function publishPage(
  nc: NatsConnection,
  page: Pick<DeliveryPageSpec, "pageId" | "broadcastId" | "contentRef" | "recipients"> & Partial<DeliveryPageSpec>,
): Promise<void> {
  await new DeliveryJobPublisher(jetstream(nc)).publishPage({ workspaceId: "ws_acme", fromEmail: "news@acme.test", fromName: "Acme", enqueuedAt: new Date(), ...page });
}

/** The secret the suites give the delivery service (and the renderer compile). */
export const SECRET = "delivery-suite-secret-0123456789";

/** Environment for a delivery process (or in-process config) wired to the test's servers. */
export function deliveryEnv(opts: { natsUrl: string; smtpUrl?: string; dataDir: string; neighboursUrl: string; extra?: Record<string, string> }) {
  return {
    MAILROOM_NATS_URL: opts.natsUrl,
    ...(opts.smtpUrl ? { MAILROOM_SMTP_URL: opts.smtpUrl } : {}),
    MAILROOM_DATA_DIR: opts.dataDir,
    MAILROOM_PUBLIC_URL: "https://mail.acme.test",
    MAILROOM_SECRET: SECRET,
    MAILROOM_ACCOUNTS_URL: opts.neighboursUrl,
    MAILROOM_AUDIENCE_URL: opts.neighboursUrl,
    MAILROOM_SMTP_IGNORE_TLS: "1",
    MAILROOM_SMTP_TIMEOUT_MS: "3000",
    MAILROOM_DELIVERY_ACK_WAIT_MS: "3000",
    MAILROOM_DELIVERY_RETRY_BASE_MS: "150",
    MAILROOM_DELIVERY_PAUSE_RECHECK_MS: "150",
    MAILROOM_DELIVERY_CONCURRENCY: "8",
    MAILROOM_DELIVERY_SHUTDOWN_GRACE_MS: "2000",
    MAILROOM_LOG_LEVEL: "warn",
    ...opts.extra,
  };
}

export function configsFrom(env: Record<string, string>): { config: Config; settings: DeliverySettings } {
  return { config: loadConfig(env), settings: loadDeliverySettings(env) };
}

export async function tempDir(prefix: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** The value of a header in a raw message, unfolded. */
export function headerOf(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, " ");
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

/**
 * The delivery service in this process, as main.ts wires it: its store on disk, the
 * JetStream consumer and the Connect admin server, plus a client for that server.
 */
export async function startDeliveryUnderTest(nc: NatsConnection, env: Record<string, string>) {
  const { config, settings } = configsFrom(env);
  const store = await openStore({ dataDir: config.dataDir, service: "delivery" });
  const runtime = await startDelivery({ config, settings, logger: silentLogger, nc, store });
  const server = await startConnectServer({ routes: deliveryRoutes(runtime.admin), logger: silentLogger });
  const client: Client<typeof DeliveryService> = connectClient(DeliveryService, server.url);
  return {
    runtime,
    client,
    async stop() {
      await runtime.stop();
      await server.close();
      await store.close();
    },
  };
}
