import { connect, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import { publishTraced } from "./jetstream/publish.js";
import { toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { registerReadyCheck } from "./health.js";
import { installCheapRequestCancel } from "./nats-requests.js";

/**
 * JetStream plumbing for every service: stream and consumer set-up (jetstream/streams.ts),
 * the one consumer loop (jetstream/consume.ts), KV buckets (jetstream/kv.ts), connecting and
 * publishing (here). The mail pipeline's subjects, lanes and streams are services/pipeline's
 * (subjects.ts, streams.ts).
 */
export type { NatsConnection, JetStreamClient, JsMsg };
export * from "./jetstream/streams.js";
export * from "./jetstream/consume.js";
export * from "./jetstream/kv.js";
export * from "./jetstream/publish.js";

/** The servers of MAILROOM_NATS_URL: one URL, or several (a cluster) separated by commas. */
export function natsServers(url: string): string[] {
  return url.split(",").map((s) => s.trim()).filter(Boolean);
}

/**
 * Connects to any of the servers (a cluster's members: the client fails over between them and
 * learns the others from the cluster) and registers the connection's readiness for /readyz.
 */
export async function connectNats(
  url: string,
  name: string,
  /** Extra connection options, e.g. `{ noAsyncTraces: true }` for hot paths. */
  options: Partial<ConnectionOptions> = {},
): Promise<NatsConnection> {
  installCheapRequestCancel();
  const nc = await connect({ servers: natsServers(url), name, maxReconnectAttempts: -1, reconnectTimeWait: 500, ...options });
  watchNatsReadiness(nc, name);
  return nc;
}

/** Ready while connected: not while reconnecting, nor once closed. */
function watchNatsReadiness(nc: NatsConnection, name: string): void {
  let connected = true;
  const unregister = registerReadyCheck({
    name: `nats:${name}`,
    check: () => {
      if (nc.isClosed()) throw new Error("connection closed");
      if (!connected) throw new Error("reconnecting");
    },
  });
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" || s.type === "reconnecting") connected = false;
      else if (s.type === "reconnect") connected = true;
    }
  })().catch(() => undefined);
  void nc.closed().finally(unregister);
}

/** Publishes a protobuf message with a Nats-Msg-Id so retried publishes are deduplicated. */
export async function publishProto<D extends DescMessage>(
  js: JetStreamClient,
  subject: string,
  schema: D,
  message: MessageShape<D>,
  msgID: string,
): Promise<void> {
  await publishTraced(js, subject, toBinary(schema, message), { msgID });
}
