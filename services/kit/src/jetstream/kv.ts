/**
 * JetStream KV buckets with the stream replica count of the deployment (MAILROOM_NATS_REPLICAS).
 * `Kvm.create` opens an existing bucket as it is, so a bucket made on a single server would
 * stay at one replica on a cluster: here the count is brought to the configured one.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV, type KvOptions } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { loadConfig } from "../config.js";
import { retryOnTimeout } from "./streams.js";

export async function openKvBucket(
  nc: NatsConnection,
  bucket: string,
  options: Partial<KvOptions> = {},
  replicas = loadConfig().natsReplicas,
): Promise<KV> {
  // Retried on a JetStream API timeout as ensureMailStreams' streams are: a unit starting beside
  // a running set on a cluster (every unit of the new set updating every stream through the meta
  // leader at once) saw this open time out after 5 s and exited before listening.
  const kv = await retryOnTimeout(() => new Kvm(nc).create(bucket, { ...options, replicas }));
  const status = await retryOnTimeout(() => kv.status());
  if (status.replicas !== replicas) {
    const jsm = await jetstreamManager(nc);
    const stream = status.streamInfo.config.name;
    await retryOnTimeout(() => jsm.streams.update(stream, { ...status.streamInfo.config, num_replicas: replicas }));
  }
  return kv;
}
