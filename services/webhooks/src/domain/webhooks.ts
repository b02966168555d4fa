import { appError, badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import type { CreateWebhookInput, Delivery, UpdateWebhookInput, Webhook } from "./model.js";
import type { Clock, DeliveryKey, DeliveryStore, Ids, Logger, TargetPolicy, WebhookChanges, WebhookStore } from "./ports.js";
import { testPayload } from "./events.js";
import { validDisplayName, validEvents, validRequestedStatus, validToken, validUrl } from "./validate.js";

export interface WebhooksDeps {
  webhooks: WebhookStore;
  deliveries: DeliveryStore;
  clock: Clock;
  ids: Ids;
  logger: Logger;
  /** Which URLs may be targets (checked at create and update; the sender checks again at each delivery). */
  targets: TargetPolicy;
  /** Called when new deliveries are due now (the outbox looks at once instead of at its next poll). */
  wake: () => void;
}

const DEFAULT_DELIVERY_LIST = 50;

/** A page's end as the cursor callers pass back: base64url of JSON [createdAt ms, id]. */
export function encodeDeliveryCursor(key: DeliveryKey): string {
  return Buffer.from(JSON.stringify([key.createdAt.getTime(), key.id])).toString("base64url");
}

export function decodeDeliveryCursor(cursor: string): DeliveryKey {
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === "string" && v[1].length <= 100) {
      return { createdAt: new Date(v[0] as number), id: v[1] };
    }
  } catch { /* refused below */ }
  throw badRequest("invalid_cursor", "cursor is not one this API returned");
}
const MAX_DELIVERY_LIST = 200;

function assertWorkspace(workspaceId: string): void {
  if (!workspaceId) throw badRequest("invalid_payload", "workspaceId is required");
}

const webhookNotFound = () => notFound("webhook_not_found", "Webhook not found");
const notActive = () => conflict("webhook_not_active", "The webhook is not active; set its status to ACTIVE first");

/**
 * The management use cases of the Connect API: webhooks of one workspace, test events,
 * delivery history and redelivery. Another workspace's webhook is "not found".
 */
export class Webhooks {
  constructor(private readonly deps: WebhooksDeps) {}

  async create(workspaceId: string, input: CreateWebhookInput): Promise<Webhook> {
    assertWorkspace(workspaceId);
    const url = await this.allowedUrl(input.url);
    const events = validEvents(input.events);
    const token = input.token === undefined ? this.deps.ids.token() : validToken(input.token);
    const displayName = input.displayName ? validDisplayName(input.displayName) : new URL(url).host;
    const now = this.deps.clock.now();
    const webhook: Webhook = {
      id: this.deps.ids.webhookId(),
      workspaceId,
      url,
      events,
      displayName,
      status: "ACTIVE",
      token,
      createdAt: now,
      updatedAt: now,
      consecutiveFailures: 0,
    };
    await this.deps.webhooks.insert(webhook);
    this.deps.logger.info({ workspaceId, webhookId: webhook.id, events }, "webhook created");
    return webhook;
  }

  /** A valid URL whose host is, and resolves to, only addresses a webhook may reach. */
  private async allowedUrl(value: unknown): Promise<string> {
    const url = validUrl(value);
    const why = await this.deps.targets.refusal(url);
    if (why) {
      // The gateway's error table appends what lifts it (MAILROOM_WEBHOOK_ALLOW_NETWORKS).
      throw badRequest("webhook_url_not_allowed", `url is not allowed: ${why}; webhooks may only target public addresses`);
    }
    return url;
  }

  async get(workspaceId: string, id: string): Promise<Webhook> {
    assertWorkspace(workspaceId);
    const webhook = await this.deps.webhooks.find(workspaceId, id);
    if (!webhook) throw webhookNotFound();
    return webhook;
  }

  async list(workspaceId: string): Promise<Webhook[]> {
    assertWorkspace(workspaceId);
    return this.deps.webhooks.listFresh(workspaceId);
  }

  async update(workspaceId: string, id: string, input: UpdateWebhookInput): Promise<Webhook> {
    const current = await this.get(workspaceId, id);
    const changes: WebhookChanges = {};
    if (input.url !== undefined) changes.url = await this.allowedUrl(input.url);
    if (input.token !== undefined) changes.token = validToken(input.token);
    if (input.events !== undefined) changes.events = validEvents(input.events);
    if (input.displayName !== undefined) changes.displayName = validDisplayName(input.displayName);
    if (input.status !== undefined) {
      const status = validRequestedStatus(input.status);
      if (current.status === "BANNED") throw appError({ code: "webhook_banned", httpStatus: 403, message: "This webhook is banned" });
      if (status !== current.status) {
        changes.status = status;
        if (status === "ACTIVE") changes.clearFailures = true;
      }
    }
    const now = this.deps.clock.now();
    const updated = await this.deps.webhooks.update(workspaceId, id, changes, now);
    if (!updated) throw webhookNotFound();
    if (changes.status === "PAUSED") {
      const held = await this.deps.deliveries.holdAll(id);
      this.deps.logger.info({ workspaceId, webhookId: id, held }, "webhook paused");
    } else if (changes.status === "ACTIVE") {
      const released = await this.deps.deliveries.releaseAll(id, now);
      this.deps.logger.info({ workspaceId, webhookId: id, released }, "webhook resumed");
      if (released > 0) this.deps.wake();
    }
    return updated;
  }

  async delete(workspaceId: string, id: string): Promise<Webhook> {
    assertWorkspace(workspaceId);
    const deleted = await this.deps.webhooks.delete(workspaceId, id);
    if (!deleted) throw webhookNotFound();
    await this.deps.deliveries.deleteForWebhook(id);
    this.deps.logger.info({ workspaceId, webhookId: id }, "webhook deleted");
    return deleted;
  }

  /** A TESTING_CONNECTION delivery, due now, whatever the webhook subscribes to. */
  async sendTestEvent(workspaceId: string, id: string): Promise<Delivery> {
    const webhook = await this.get(workspaceId, id);
    if (webhook.status !== "ACTIVE") throw notActive();
    const now = this.deps.clock.now();
    const eventId = this.deps.ids.eventId();
    const delivery: Delivery = {
      id: this.deps.ids.deliveryId(),
      webhookId: id,
      workspaceId,
      eventId,
      eventType: "TESTING_CONNECTION",
      body: JSON.stringify(testPayload(eventId, workspaceId, id, now)),
      state: "PENDING",
      createdAt: now,
      attempts: 0,
      retryStep: 0,
      nextAttemptAt: now,
      history: [],
    };
    await this.deps.deliveries.insertNew(delivery);
    this.deps.wake();
    return delivery;
  }

  async listDeliveries(workspaceId: string, webhookId: string, limit?: number): Promise<Delivery[]> {
    await this.get(workspaceId, webhookId);
    const n = !limit || limit < 1 ? DEFAULT_DELIVERY_LIST : Math.min(limit, MAX_DELIVERY_LIST);
    return this.deps.deliveries.list(workspaceId, webhookId, n);
  }

  /**
   * A page of the webhook's deliveries, newest first, and the cursor of the next page (none on
   * the last). The cursor is the page's last (createdAt, id), opaque to callers.
   */
  async pageDeliveries(workspaceId: string, webhookId: string, opts: { limit?: number; cursor?: string } = {}): Promise<{ deliveries: Delivery[]; nextCursor?: string }> {
    const after = opts.cursor ? decodeDeliveryCursor(opts.cursor) : undefined;
    await this.get(workspaceId, webhookId);
    const n = !opts.limit || opts.limit < 1 ? DEFAULT_DELIVERY_LIST : Math.min(opts.limit, MAX_DELIVERY_LIST);
    const found = await this.deps.deliveries.list(workspaceId, webhookId, n + 1, after);
    const deliveries = found.slice(0, n);
    const last = deliveries[deliveries.length - 1];
    return { deliveries, nextCursor: found.length > n && last ? encodeDeliveryCursor({ createdAt: last.createdAt, id: last.id }) : undefined };
  }

  /** The deliveries of CONTACT_* events about one contact of the workspace, to any of its webhooks, newest first. */
  async listContactDeliveries(workspaceId: string, contactId: string, limit?: number): Promise<Delivery[]> {
    assertWorkspace(workspaceId);
    if (typeof contactId !== "string" || !contactId || contactId.length > 100) throw badRequest("invalid_payload", "contactId is required");
    const n = !limit || limit < 1 ? DEFAULT_DELIVERY_LIST : Math.min(limit, MAX_DELIVERY_LIST);
    return this.deps.deliveries.listForContact(workspaceId, contactId, n);
  }

  /** A contact's erasure: its finished deliveries (bodies holding its data) are dropped. */
  async eraseContactDeliveries(workspaceId: string, contactId: string): Promise<number> {
    assertWorkspace(workspaceId);
    if (typeof contactId !== "string" || !contactId || contactId.length > 100) throw badRequest("invalid_payload", "contactId is required");
    return this.deps.deliveries.eraseFinishedForContact(workspaceId, contactId);
  }

  /** Sends one delivery again now: same body and webhook-id, a fresh retry schedule. */
  async redeliver(workspaceId: string, webhookId: string, deliveryId: string): Promise<Delivery> {
    const webhook = await this.get(workspaceId, webhookId);
    if (webhook.status !== "ACTIVE") throw notActive();
    const existing = await this.deps.deliveries.find(workspaceId, webhookId, deliveryId);
    if (!existing) throw notFound("delivery_not_found", "Delivery not found");
    const due = await this.deps.deliveries.redeliver(workspaceId, webhookId, deliveryId, this.deps.clock.now());
    if (!due) throw conflict("delivery_in_progress", "This delivery is being sent right now");
    this.deps.wake();
    return due;
  }
}
