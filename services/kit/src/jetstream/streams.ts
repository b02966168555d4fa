/**
 * Set-up of streams and durable consumers, for any stream (the mail pipeline's streams and
 * subjects are services/pipeline's). Set-up is idempotent: it updates what exists and adds
 * what the server reports as not found; any other failure (no JetStream, a refused update, a
 * timeout) propagates.
 */
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { errors as natsErrors } from "@nats-io/transport-node";

/** True when `err` is the JetStream API's answer with this error code (e.g. 10059, 10014). */
export function isJetStreamApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
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
  /**
   * Where a durable created now starts in the stream (it takes over from another durable);
   * unset: from the first message. A durable that exists keeps its position.
   */
  startSeq?: number;
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
    await jsm.consumers.add(
      spec.stream,
      spec.startSeq ? { ...config, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: spec.startSeq } : config,
    );
    return;
  }
  // The deliver policy is fixed when a durable is made: an update leaves it as it is.
  const { deliver_policy: _policy, ...updatable } = config;
  await jsm.consumers.update(spec.stream, spec.durable, updatable);
}
