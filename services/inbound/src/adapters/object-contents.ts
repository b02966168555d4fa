import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Objm, setSha256Backend, StorageType, type ObjectStore } from "@nats-io/obj";
import type { ReceivedContents } from "../domain/ports.js";

/** The object store bucket of received messages (stream OBJ_inbound). */
export const INBOUND_BUCKET = "inbound";

/**
 * Received messages' bytes in JetStream's object store (bucket `inbound`): the raw message,
 * each attachment, large details. Retention is the bucket's TTL (the stream's max_age, set to
 * MAILROOM_INBOUND_RETENTION_DAYS and updated when that changes): JetStream drops the chunks of
 * an object older than that by itself, as the store's TTL index drops its record; no sweep.
 */
export class ObjectStoreContents implements ReceivedContents {
  private constructor(private readonly bucket: ObjectStore) {}

  static async open(nc: NatsConnection, opts: { retentionMs: number; replicas: number }): Promise<ObjectStoreContents> {
    // Every object's digest: node:crypto's, not the pure-JS default (a fifth of the unit's CPU per received message).
    setSha256Backend("native");
    const ttl = opts.retentionMs * 1_000_000;
    const bucket = await new Objm(jetstream(nc)).create(INBOUND_BUCKET, {
      storage: StorageType.File,
      replicas: opts.replicas,
      ttl,
      description: "Mailroom received email: raw messages and attachments (DESIGN §10.4)",
    });
    const status = await bucket.status();
    if (status.ttl !== ttl) {
      // An existing bucket keeps its config on create: the retention setting changed since.
      const jsm = await jetstreamManager(nc);
      await jsm.streams.update(status.streamInfo.config.name, { max_age: ttl });
    }
    return new ObjectStoreContents(bucket);
  }

  async put(name: string, data: Uint8Array): Promise<void> {
    await this.bucket.putBlob({ name }, data);
  }

  async get(name: string): Promise<AsyncIterable<Uint8Array> | null> {
    const result = await this.bucket.get(name);
    if (!result) return null;
    return chunksOf(result.data, result.error);
  }
}

async function* chunksOf(stream: ReadableStream<Uint8Array>, error: Promise<Error | null>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value?.byteLength) yield value;
    }
  } finally {
    reader.releaseLock();
  }
  const err = await error;
  if (err) throw err;
}
