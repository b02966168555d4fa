/**
 * The streams every service relies on, and the set-up of streams and durable consumers.
 * Set-up is idempotent: it updates what exists and adds what the server reports as not
 * found; any other failure (no JetStream, a refused update, a timeout) propagates.
 */
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  jetstreamManager,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { errors as natsErrors, type NatsConnection } from "@nats-io/transport-node";
import { loadConfig } from "../config.js";
import { CONTACT_EVENTS_STREAM, CONTACT_EVENTS_SUBJECTS, DELIVERY_STREAM, DELIVERY_SUBJECTS, EVENTS_STREAM, EVENTS_SUBJECTS } from "./subjects.js";

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
];

/** True when `err` is the JetStream API's answer with this error code (e.g. 10059, 10014). */
export function isJetStreamApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

/**
 * Creates (or updates) the streams every service relies on, each with `replicas` copies
 * (MAILROOM_NATS_REPLICAS): on a cluster, 3 keeps every stream and its consumers available
 * when a node is lost. An existing stream is updated to the count; its consumers follow it.
 */
export async function ensureStreams(nc: NatsConnection, replicas = loadConfig().natsReplicas): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const config of STREAMS) await retryOnTimeout(() => ensureStream(jsm, { ...config, num_replicas: replicas }));
}

/**
 * Retries a JetStream API call that timed out. On a cluster, processes starting together
 * create the same replicated streams at once and a stream still electing its leader answers
 * late; a timeout then is no failure. After `attempts` timeouts the last one propagates.
 */
export async function retryOnTimeout<T>(call: () => Promise<T>, attempts = 6): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof natsErrors.TimeoutError) || attempt >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 250 * attempt));
    }
  }
}

export async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  try {
    await jsm.streams.info(config.name);
  } catch (err) {
    if (!isJetStreamApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
    await jsm.streams.add(config);
    return;
  }
  await jsm.streams.update(config.name, config);
}

export interface ConsumerSpec {
  stream: string;
  durable: string;
  filterSubjects?: string[];
  /** Deliveries before the server gives a message up (the handler sees the last one). */
  maxDeliver?: number;
  ackWaitMs?: number;
  maxAckPending?: number;
}

export function consumerConfig(spec: ConsumerSpec): Partial<ConsumerConfig> & { durable_name: string } {
  const filters = spec.filterSubjects ?? [];
  return {
    durable_name: spec.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_deliver: spec.maxDeliver ?? 10,
    ack_wait: (spec.ackWaitMs ?? 60_000) * 1_000_000,
    max_ack_pending: spec.maxAckPending ?? 1_000,
    // nats-server 2.9 knows filter_subject only; filter_subjects needs 2.10.
    ...(filters.length === 1 ? { filter_subject: filters[0] } : filters.length > 1 ? { filter_subjects: filters } : {}),
  };
}

/** Creates (or updates) a durable pull consumer. The stream must exist. */
export async function ensureConsumer(jsm: JetStreamManager, spec: ConsumerSpec): Promise<void> {
  const config = consumerConfig(spec);
  try {
    await jsm.consumers.info(spec.stream, spec.durable);
  } catch (err) {
    if (!isJetStreamApiError(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
    await jsm.consumers.add(spec.stream, config);
    return;
  }
  await jsm.consumers.update(spec.stream, spec.durable, config);
}
