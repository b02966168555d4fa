/**
 * The mail pipeline's streams (names and subjects from subjects.ts) and their set-up through
 * kit's generic plumbing. Set-up is idempotent: it updates what exists and adds what the
 * server reports as not found; any other failure (no JetStream, a refused update, a
 * timeout after the retries) propagates.
 */
import { RetentionPolicy, StorageType, jetstreamManager, type StreamConfig } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { loadConfig } from "@mailroom/kit/config.js";
import { ensureStream, retryOnTimeout } from "@mailroom/kit/jetstream.js";
import { AUDIT_STREAM_CONFIG } from "./audit.js";
import { CONTACT_EVENTS_STREAM, CONTACT_EVENTS_SUBJECTS, DIRECTORY_EVENTS_STREAM, DIRECTORY_EVENTS_SUBJECTS, DELIVERY_STREAM, DELIVERY_SUBJECTS, EVENTS_STREAM, EVENTS_SUBJECTS, WEBHOOK_EVENTS_STREAM, WEBHOOK_EVENTS_SUBJECTS } from "./subjects.js";

const SECOND_NS = 1_000_000_000;

/** Unchanged from the first release: existing data keeps working. */
export const STREAMS: Array<Partial<StreamConfig> & { name: string }> = [
  {
    name: DELIVERY_STREAM,
    subjects: [DELIVERY_SUBJECTS],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: 2 * 60 * SECOND_NS, // msgID dedupe window
  },
  {
    name: EVENTS_STREAM,
    subjects: [EVENTS_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: 7 * 24 * 3600 * SECOND_NS,
    duplicate_window: 2 * 60 * SECOND_NS,
  },
  {
    name: CONTACT_EVENTS_STREAM,
    subjects: [CONTACT_EVENTS_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: 30 * 24 * 3600 * SECOND_NS,
    duplicate_window: 2 * 60 * SECOND_NS,
  },
  {
    name: WEBHOOK_EVENTS_STREAM,
    subjects: [WEBHOOK_EVENTS_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: 7 * 24 * 3600 * SECOND_NS,
    duplicate_window: 2 * 60 * SECOND_NS,
  },
  {
    name: DIRECTORY_EVENTS_STREAM,
    subjects: [DIRECTORY_EVENTS_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: 7 * 24 * 3600 * SECOND_NS,
    // Message ids are the events' ids, and the webhooks unit keeps one delivery per event and
    // webhook whatever the stream lets through; the window only has to cover a publish retried
    // at once. nats-server holds every id of the window in memory: an import of 1,000,000
    // contacts (7,000 a second) in a 10-minute window held all of them.
    duplicate_window: 30 * SECOND_NS,
  },
  // The audit log's hand-over (audit.ts): every unit publishes, the accounts unit stores.
  AUDIT_STREAM_CONFIG,
];

/**
 * Creates (or updates) the streams every service relies on, each with `replicas` copies
 * (MAILROOM_NATS_REPLICAS): on a cluster, 3 keeps every stream and its consumers available
 * when a node is lost. An existing stream is updated to the count; its consumers follow it.
 */
export async function ensureMailStreams(nc: NatsConnection, replicas = loadConfig().natsReplicas): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const config of STREAMS) await retryOnTimeout(() => ensureStream(jsm, { ...config, num_replicas: replicas }));
}
