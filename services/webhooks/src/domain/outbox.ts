import { pauseReason, shouldPause, type PauseRule } from "./pause.js";
import { retryDelayMs } from "./retry.js";
import { deliveryHeaders } from "./signature.js";
import type { Delivery, DeliveryAttempt, Webhook } from "./model.js";
import type { Clock, DeliveryStore, Logger, WebhookSender, WebhookStore } from "./ports.js";

export interface OutboxSettings {
  timeoutMs: number;
  retryBaseMs: number;
  /** Requests in flight to one webhook from this process. */
  maxPerEndpoint: number;
  /** Requests in flight from this process. */
  concurrency: number;
  pollMs: number;
  pause: PauseRule;
}

export interface OutboxDeps {
  deliveries: DeliveryStore;
  webhooks: WebhookStore;
  sender: WebhookSender;
  clock: Clock;
  logger: Logger;
  /** Names this process in claims; several processes share one outbox safely. */
  owner: string;
  settings: OutboxSettings;
  random?: () => number;
}

const GONE = 410;
/** Claiming passes per wake-up before waiting for the next one. */
const CLAIM_ROUNDS = 8;

/** Time a claim outlives the request's timeout before another process may take it over. */
const LEASE_MARGIN_MS = 30_000;

/**
 * Sends due deliveries. Each one is claimed with a compare-and-set (so a restart or a
 * second process never sends one attempt twice at once), posted with both signatures,
 * and recorded: 2xx succeeds; anything else is retried on the schedule of retry.ts until
 * it is spent. Per-webhook limits keep a slow endpoint from taking every slot, so it only
 * ever delays itself. A webhook that keeps failing is paused (pause.ts) and its pending
 * deliveries are held until it is resumed.
 */
export class Outbox {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly perWebhook = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private running = false;
  private draining?: Promise<void>;
  private drainAgain = false;

  constructor(private readonly deps: OutboxDeps) {}

  start(): void {
    this.running = true;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await this.draining;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Attempts in flight in this process. */
  get busy(): number {
    return this.inFlight.size;
  }

  /** Waits for the claiming pass and the attempts in flight to end. */
  async idle(): Promise<void> {
    await this.draining;
    await Promise.allSettled([...this.inFlight]);
  }

  /** New deliveries are due: look now rather than at the next poll. */
  wake(): void {
    if (this.running) void this.drain();
  }

  /** Claims and starts due deliveries until none is left or every slot is taken (coalesced). */
  drain(): Promise<void> {
    if (this.draining) {
      this.drainAgain = true;
      return this.draining;
    }
    this.draining = (async () => {
      try {
        do {
          this.drainAgain = false;
          await this.claimWhileFree();
        } while (this.drainAgain && this.running);
      } catch (err) {
        this.deps.logger.error({ err }, "webhook outbox claim failed");
      } finally {
        this.draining = undefined;
      }
    })();
    return this.draining;
  }

  private schedule(): void {
    if (!this.running) return;
    this.timer = setTimeout(async () => {
      await this.drain();
      this.schedule();
    }, this.deps.settings.pollMs);
    this.timer.unref?.();
  }

  private async claimWhileFree(): Promise<void> {
    const { settings, clock, owner, deliveries } = this.deps;
    // A few rounds: a list can be used up by other processes or by per-webhook limits.
    for (let round = 0; round < CLAIM_ROUNDS && this.running; round++) {
      const free = settings.concurrency - this.inFlight.size;
      if (free <= 0) return;
      const now = clock.now();
      const candidates = await deliveries.claimable(now, this.busyWebhooks(), free);
      if (candidates.length === 0) return;
      const leaseUntil = new Date(now.getTime() + settings.timeoutMs + LEASE_MARGIN_MS);
      for (const candidate of candidates) {
        if (!this.running || this.inFlight.size >= settings.concurrency) return;
        if ((this.perWebhook.get(candidate.webhookId) ?? 0) >= settings.maxPerEndpoint) continue;
        const delivery = await deliveries.claim(candidate.id, now, owner, leaseUntil);
        if (delivery) this.launch(delivery);
      }
    }
  }

  private busyWebhooks(): string[] {
    return [...this.perWebhook].filter(([, n]) => n >= this.deps.settings.maxPerEndpoint).map(([id]) => id);
  }

  private launch(delivery: Delivery): void {
    this.perWebhook.set(delivery.webhookId, (this.perWebhook.get(delivery.webhookId) ?? 0) + 1);
    const task: Promise<void> = this.attempt(delivery)
      .catch((err) => this.deps.logger.error({ err, deliveryId: delivery.id }, "webhook attempt failed to record"))
      .finally(() => {
        this.inFlight.delete(task);
        const left = (this.perWebhook.get(delivery.webhookId) ?? 1) - 1;
        if (left > 0) this.perWebhook.set(delivery.webhookId, left);
        else this.perWebhook.delete(delivery.webhookId);
        // A slot is free: another delivery (maybe of this webhook) may be waiting.
        this.wake();
      });
    this.inFlight.add(task);
  }

  /** One attempt of a claimed delivery. Exposed for tests. */
  async attempt(delivery: Delivery): Promise<void> {
    const { deliveries, webhooks, sender, clock, owner, settings, logger } = this.deps;
    let webhook = await webhooks.findById(delivery.webhookId);
    // Before dropping or holding, make sure a cached answer is not stale (e.g. just resumed).
    if (!webhook || webhook.status !== "ACTIVE") webhook = await webhooks.findById(delivery.webhookId, true);
    if (!webhook) return deliveries.drop(delivery.id);
    if (webhook.status !== "ACTIVE") return deliveries.hold(delivery.id, owner);

    const at = clock.now();
    const headers = deliveryHeaders(webhook.token, delivery.id, delivery.body, at);
    const result = await sender.post(webhook.url, headers, delivery.body, settings.timeoutMs);
    const ok = result.statusCode >= 200 && result.statusCode < 300;
    const attempt: DeliveryAttempt = {
      attempt: delivery.attempts + 1,
      attemptedAt: at,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      ...(ok ? {} : { error: result.error ?? `HTTP ${result.statusCode}` }),
    };
    const log = { webhookId: webhook.id, deliveryId: delivery.id, eventType: delivery.eventType, attempt: attempt.attempt };

    if (ok) {
      await deliveries.complete(delivery.id, owner, attempt, { state: "SUCCEEDED", retryStep: delivery.retryStep });
      await webhooks.recordSuccess(webhook.id);
      logger.debug({ ...log, status: result.statusCode, ms: result.durationMs }, "webhook delivered");
      return;
    }

    const now = clock.now();
    const paused = await this.countFailure(webhook, now, attempt.error!, result.statusCode === GONE);
    if (result.permanent) {
      // The target is refused (server-side request forgery guard): no retry can change that.
      await deliveries.complete(delivery.id, owner, attempt, { state: "FAILED", retryStep: delivery.retryStep + 1 });
      logger.warn({ ...log, error: attempt.error }, "webhook delivery refused: its target is not allowed");
      return;
    }
    const delay = retryDelayMs(delivery.retryStep, settings.retryBaseMs, this.deps.random);
    if (delay === undefined) {
      await deliveries.complete(delivery.id, owner, attempt, { state: "FAILED", retryStep: delivery.retryStep + 1 });
      logger.warn({ ...log, error: attempt.error }, "webhook delivery gave up: retry schedule spent");
      return;
    }
    await deliveries.complete(delivery.id, owner, attempt, {
      state: paused ? "HELD" : "PENDING",
      retryStep: delivery.retryStep + 1,
      nextAttemptAt: new Date(now.getTime() + delay),
    });
    logger.debug({ ...log, error: attempt.error, retryInMs: delay }, "webhook attempt failed");
  }

  /**
   * Counts a failure against the webhook; pauses it (and holds its deliveries) when the rule
   * says so, or at once when the receiver answered 410 Gone (Standard Webhooks: it wants no more).
   */
  private async countFailure(webhook: Webhook, now: Date, error: string, gone: boolean): Promise<boolean> {
    const { webhooks, deliveries, settings, logger } = this.deps;
    const after = await webhooks.recordFailure(webhook.id, now);
    if (!after) return false;
    if (after.status !== "ACTIVE") return true;
    if (!gone && !shouldPause(after, now, settings.pause)) return false;
    const reason = gone ? "Paused automatically: the endpoint answered 410 Gone" : pauseReason(after, error);
    if (await webhooks.pause(webhook.id, reason, now)) {
      const held = await deliveries.holdAll(webhook.id);
      logger.warn(
        { workspaceId: webhook.workspaceId, webhookId: webhook.id, failures: after.consecutiveFailures, failingSince: after.failingSince, held },
        "webhook paused: its deliveries keep failing",
      );
    }
    return true;
  }
}
