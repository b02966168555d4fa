/**
 * JetStream KV buckets with the stream replica count of the deployment (MAILROOM_NATS_REPLICAS).
 * `Kvm.create` opens an existing bucket as it is, so a bucket made on a single server would
 * stay at one replica on a cluster: here the count is brought to the configured one.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV, type KvOptions } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { loadConfig } from "../config.js";

export async function openKvBucket(
  nc: NatsConnection,
  bucket: string,
  options: Partial<KvOptions> = {},
  replicas = loadConfig().natsReplicas,
): Promise<KV> {
  const kv = await new Kvm(nc).create(bucket, { ...options, replicas });
  const status = await kv.status();
  if (status.replicas !== replicas) {
    const jsm = await jetstreamManager(nc);
    const stream = status.streamInfo.config.name;
    await jsm.streams.update(stream, { ...status.streamInfo.config, num_replicas: replicas });
  }
  return kv;
}
