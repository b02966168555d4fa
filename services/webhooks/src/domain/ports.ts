import type { Delivery, DeliveryAttempt, DeliveryState, SendResult, Webhook, WebhookStatus } from "./model.js";

/**
 * Everything the webhook domain needs from the outside world. Implementations live in
 * ../adapters/; unit tests build the domain with in-memory ones (../testing.ts).
 */

export interface WebhookChanges {
  url?: string;
  token?: string;
  events?: Webhook["events"];
  displayName?: string;
  status?: WebhookStatus;
  /** Resuming clears the failure run and the pause reason. */
  clearFailures?: boolean;
}

/** Webhook endpoints. */
export interface WebhookStore {
  insert(webhook: Webhook): Promise<void>;
  find(workspaceId: string, id: string): Promise<Webhook | null>;
  /** By id alone (the outbox, which has no workspace in hand); `fresh` skips any cache. */
  findById(id: string, fresh?: boolean): Promise<Webhook | null>;
  /** Every webhook of the workspace, oldest first (the dispatcher's lookup; may be cached). */
  list(workspaceId: string): Promise<Webhook[]>;
  /** The same, read from the store: what an API caller sees (its own writes and automatic pauses). */
  listFresh(workspaceId: string): Promise<Webhook[]>;
  update(workspaceId: string, id: string, changes: WebhookChanges, at: Date): Promise<Webhook | null>;
  delete(workspaceId: string, id: string): Promise<Webhook | null>;
  /** A 2xx answer: ends the run of failures. */
  recordSuccess(id: string): Promise<void>;
  /** A failed attempt: counts it (and starts the run at `at`); the webhook after the change. */
  recordFailure(id: string, at: Date): Promise<Webhook | null>;
  /** CAS ACTIVE → PAUSED with a reason; false when it was not ACTIVE. */
  pause(id: string, reason: string, at: Date): Promise<boolean>;
}

/** How an attempt leaves a delivery. */
export interface AttemptOutcome {
  state: DeliveryState;
  retryStep: number;
  nextAttemptAt?: Date;
}

/** Where a page of deliveries ends: its last delivery's creation time and id. */
export interface DeliveryKey {
  createdAt: Date;
  id: string;
}

/** Deliveries and their outbox state (due, claimed by a process, held while paused). */
export interface DeliveryStore {
  /** False when this (event, webhook) already has a delivery: a replayed event sends nothing twice. */
  insertNew(delivery: Delivery): Promise<boolean>;
  /**
   * Deliveries ready for an attempt, earliest first: due ones, then claims whose lease ran
   * out (their process died), skipping the webhooks in `skipWebhookIds` (busy ones). One
   * query serves many claims.
   */
  claimable(now: Date, skipWebhookIds: string[], limit: number): Promise<Array<{ id: string; webhookId: string }>>;
  /** CAS: takes one claimable delivery for `owner` until `leaseUntil`; null when it is no longer claimable (another process took it). */
  claim(id: string, now: Date, owner: string, leaseUntil: Date): Promise<Delivery | null>;
  /** Records an attempt of a claimed delivery; false when `owner` lost the claim. */
  complete(id: string, owner: string, attempt: DeliveryAttempt, outcome: AttemptOutcome): Promise<boolean>;
  /** A claimed delivery whose webhook is not active: held until it is. */
  hold(id: string, owner: string): Promise<void>;
  /** A claimed delivery whose webhook is gone. */
  drop(id: string): Promise<void>;
  /** Every pending delivery of the webhook becomes HELD (paused). */
  holdAll(webhookId: string): Promise<number>;
  /** Every HELD delivery of the webhook becomes due at `now` (resumed). */
  releaseAll(webhookId: string, now: Date): Promise<number>;
  find(workspaceId: string, webhookId: string, id: string): Promise<Delivery | null>;
  /** Newest first (createdAt, then id, descending); `after`: only those after that one in this order (keyset paging). */
  list(workspaceId: string, webhookId: string, limit: number, after?: DeliveryKey): Promise<Delivery[]>;
  /** The workspace's deliveries of events about one contact, to any webhook, newest first. */
  listForContact(workspaceId: string, contactId: string, limit: number): Promise<Delivery[]>;
  /** Deletes the workspace's finished deliveries of events about one contact; answers how many. */
  eraseFinishedForContact(workspaceId: string, contactId: string): Promise<number>;
  /** CAS: a delivery not being sent right now becomes due at `now` with a fresh retry schedule. */
  redeliver(workspaceId: string, webhookId: string, id: string, now: Date): Promise<Delivery | null>;
  deleteForWebhook(webhookId: string): Promise<void>;
}

/**
 * Which URLs a webhook may target (server-side request forgery, DESIGN.md §9.2): why `url` is
 * refused (its host is or resolves to a non-public address the operator does not trust), or
 * undefined when it is allowed.
 */
export interface TargetPolicy {
  refusal(url: string): Promise<string | undefined>;
}

/** One HTTP POST; never throws (a timeout or connection error is a result with statusCode 0). */
export interface WebhookSender {
  post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SendResult>;
}

/** kit's one clock. */
export type { Clock } from "@mailroom/kit/clock.js";

export interface Ids {
  webhookId(): string;
  deliveryId(): string;
  eventId(): string;
  /** A fresh signing secret. */
  token(): string;
}

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}
