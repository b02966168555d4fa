import { needsReseal, openStoredSecret, sealSecret, SECRET_PURPOSES, type SecretKeys } from "@mailroom/kit/secrets.js";
import { DuplicateKeyError, type Collection, type Filter, type Store, type Update } from "@mailroom/store/port.js";
import type { Delivery, DeliveryAttempt, Webhook } from "../domain/model.js";
import type { EmailTags, Tag } from "../domain/dispatch.js";
import type { AttemptOutcome, DeliveryKey, DeliveryStore, WebhookChanges, WebhookStore } from "../domain/ports.js";

/*
 * The webhook domain's stores over kit's document store (embedded engine or MongoDB). The
 * Mongo-style queries and the indexes that serve them live side by side here.
 */

type WebhookDoc = Omit<Webhook, "id"> & { _id: string };

/**
 * `outbox` is present only while a delivery waits to be sent ("due"), is being sent
 * ("claimed") or is held while its webhook is paused ("held"); it is indexed sparse, so
 * finished deliveries leave the index. `dedupeKey` (event, webhook) is unique: a replayed
 * event cannot create a second delivery.
 */
type DeliveryDoc = Omit<Delivery, "id"> & {
  _id: string;
  dedupeKey: string;
  outbox?: "due" | "claimed" | "held";
  leaseOwner?: string;
  leaseUntil?: Date;
};

/** Delivery records (with their history) are kept this long; MAIL_EVENTS keeps events 7 days. */
export const DELIVERY_TTL_SECONDS = 8 * 24 * 3600;
/** Attempts kept per delivery (the retry schedule makes 12). */
const HISTORY_LENGTH = 20;

const TOKEN_PURPOSE = SECRET_PURPOSES.webhookToken;

function toDelivery(doc: DeliveryDoc): Delivery {
  const { _id, dedupeKey: _k, outbox: _o, leaseOwner: _lo, leaseUntil: _lu, ...rest } = doc;
  return { id: _id, ...rest, history: rest.history ?? [] };
}

const dedupeKeyOf = (eventId: string, webhookId: string) => `${eventId}:${webhookId}`;

/**
 * Webhook endpoints. Each signing token is sealed (kit/secrets) in the store and opened on
 * read: the domain, and through it the API, sees the token; no store file holds it.
 */
export class CollectionWebhookStore implements WebhookStore {
  private readonly webhooks: Collection<WebhookDoc>;

  constructor(
    store: Store,
    private readonly keys: SecretKeys,
  ) {
    this.webhooks = store.collection<WebhookDoc>("webhooks");
  }

  async init(): Promise<void> {
    await this.webhooks.createIndex({ keys: { workspaceId: 1 } });
    await this.resealTokens();
  }

  /**
   * Seals plaintext tokens left by older versions and reseals tokens sealed under
   * MAILROOM_SECRET_PREVIOUS, so a rotation completes with one restart. Webhooks are few.
   */
  private async resealTokens(): Promise<void> {
    for (const doc of await this.webhooks.find({}, { projection: { token: 1 } })) {
      const stored = doc.token;
      if (!stored || !needsReseal(this.keys, TOKEN_PURPOSE, stored)) continue;
      const sealed = this.seal(openStoredSecret(this.keys, TOKEN_PURPOSE, stored));
      // Conditional on the value read: a token changed meanwhile is already sealed afresh.
      await this.webhooks.updateOne({ _id: doc._id, token: stored }, { $set: { token: sealed } });
    }
  }

  private seal(token: string): string {
    return token ? sealSecret(this.keys, TOKEN_PURPOSE, token) : token;
  }

  private toWebhook({ _id, token, ...rest }: WebhookDoc): Webhook {
    return { id: _id, ...rest, token: token ? openStoredSecret(this.keys, TOKEN_PURPOSE, token) : token };
  }

  async insert(webhook: Webhook): Promise<void> {
    const { id, token, ...rest } = webhook;
    await this.webhooks.insertOne({ _id: id, ...rest, token: this.seal(token) });
  }

  async find(workspaceId: string, id: string): Promise<Webhook | null> {
    const doc = await this.webhooks.findOne({ _id: id, workspaceId });
    return doc ? this.toWebhook(doc) : null;
  }

  async findById(id: string): Promise<Webhook | null> {
    const doc = await this.webhooks.findOne({ _id: id });
    return doc ? this.toWebhook(doc) : null;
  }

  /** The store has no cache: its list is always fresh. */
  listFresh(workspaceId: string): Promise<Webhook[]> {
    return this.list(workspaceId);
  }

  async list(workspaceId: string): Promise<Webhook[]> {
    return (await this.webhooks.find({ workspaceId }, { sort: { createdAt: 1, _id: 1 } })).map((doc) => this.toWebhook(doc));
  }

  async update(workspaceId: string, id: string, changes: WebhookChanges, at: Date): Promise<Webhook | null> {
    const { clearFailures, ...fields } = changes;
    const set: Record<string, unknown> = { updatedAt: at };
    for (const [key, value] of Object.entries(fields)) if (value !== undefined) set[key] = key === "token" ? this.seal(value as string) : value;
    const update: Update = { $set: set };
    if (clearFailures) {
      set.consecutiveFailures = 0;
      update.$unset = { failingSince: "", pausedReason: "" };
    }
    const doc = await this.webhooks.findOneAndUpdate({ _id: id, workspaceId }, update, { returnDocument: "after" });
    return doc ? this.toWebhook(doc) : null;
  }

  async delete(workspaceId: string, id: string): Promise<Webhook | null> {
    const doc = await this.webhooks.findOne({ _id: id, workspaceId });
    if (!doc) return null;
    const { deletedCount } = await this.webhooks.deleteOne({ _id: id, workspaceId });
    return deletedCount === 1 ? this.toWebhook(doc) : null;
  }

  async recordSuccess(id: string): Promise<void> {
    // Matches only when there is a run to end: a success on a healthy webhook writes nothing.
    await this.webhooks.updateOne({ _id: id, consecutiveFailures: { $gt: 0 } }, { $set: { consecutiveFailures: 0 }, $unset: { failingSince: "" } });
  }

  async recordFailure(id: string, at: Date): Promise<Webhook | null> {
    // Two steps, each atomic: count, then start the run if this failure opened it.
    await this.webhooks.updateOne({ _id: id, failingSince: { $exists: false } }, { $set: { failingSince: at } });
    const doc = await this.webhooks.findOneAndUpdate({ _id: id }, { $inc: { consecutiveFailures: 1 } }, { returnDocument: "after" });
    return doc ? this.toWebhook(doc) : null;
  }

  async pause(id: string, reason: string, at: Date): Promise<boolean> {
    const res = await this.webhooks.updateOne({ _id: id, status: "ACTIVE" }, { $set: { status: "PAUSED", pausedReason: reason, updatedAt: at } });
    return res.matchedCount === 1;
  }
}

export class CollectionDeliveryStore implements DeliveryStore {
  private readonly deliveries: Collection<DeliveryDoc>;

  constructor(store: Store) {
    this.deliveries = store.collection<DeliveryDoc>("webhook_deliveries");
  }

  async init(): Promise<void> {
    await Promise.all([
      this.deliveries.createIndex({ keys: { dedupeKey: 1 }, unique: true }),
      // Claims select by outbox state; only unfinished deliveries are in this index.
      this.deliveries.createIndex({ keys: { outbox: 1 }, sparse: true }),
      // No index on webhookId: history, hold and release are rare calls that may scan, while
      // the upkeep of a low-cardinality index on the embedded store costs O(deliveries of
      // the webhook) on every attempt recorded.
      this.deliveries.createIndex({ keys: { createdAt: 1 }, expireAfterSeconds: DELIVERY_TTL_SECONDS }),
      // A contact's webhook history: only CONTACT_* deliveries carry contactId (a few per contact).
      this.deliveries.createIndex({ keys: { workspaceId: 1, contactId: 1, createdAt: -1 }, sparse: true }),
    ]);
  }

  async insertNew(delivery: Delivery): Promise<boolean> {
    const { id, ...rest } = delivery;
    try {
      await this.deliveries.insertOne({
        _id: id,
        ...rest,
        dedupeKey: dedupeKeyOf(delivery.eventId, delivery.webhookId),
        ...(delivery.state === "PENDING" ? { outbox: "due" as const } : {}),
      });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  async claimable(now: Date, skipWebhookIds: string[], limit: number): Promise<Array<{ id: string; webhookId: string }>> {
    const skip: Filter = skipWebhookIds.length > 0 ? { webhookId: { $nin: skipWebhookIds } } : {};
    const projection = { _id: 1, webhookId: 1 } as const;
    const due = await this.deliveries.find({ outbox: "due", nextAttemptAt: { $lte: now }, ...skip }, { sort: { nextAttemptAt: 1 }, limit, projection });
    const stale =
      due.length < limit
        ? await this.deliveries.find({ outbox: "claimed", leaseUntil: { $lt: now }, ...skip }, { sort: { leaseUntil: 1 }, limit: limit - due.length, projection })
        : [];
    return [...due, ...stale].map((d) => ({ id: d._id, webhookId: d.webhookId }));
  }

  async claim(id: string, now: Date, owner: string, leaseUntil: Date): Promise<Delivery | null> {
    const doc = await this.deliveries.findOneAndUpdate(
      { _id: id, $or: [{ outbox: "due", nextAttemptAt: { $lte: now } }, { outbox: "claimed", leaseUntil: { $lt: now } }] },
      { $set: { outbox: "claimed", leaseOwner: owner, leaseUntil } },
      { returnDocument: "after" },
    );
    return doc ? toDelivery(doc) : null;
  }

  async complete(id: string, owner: string, attempt: DeliveryAttempt, outcome: AttemptOutcome): Promise<boolean> {
    const set: Record<string, unknown> = { state: outcome.state, retryStep: outcome.retryStep, attempts: attempt.attempt, lastAttempt: attempt };
    const unset: Record<string, ""> = { leaseOwner: "", leaseUntil: "" };
    if (outcome.state === "PENDING" || outcome.state === "HELD") {
      set.outbox = outcome.state === "PENDING" ? "due" : "held";
      set.nextAttemptAt = outcome.nextAttemptAt;
    } else {
      unset.outbox = "";
      unset.nextAttemptAt = "";
    }
    const res = await this.deliveries.updateOne(
      { _id: id, outbox: "claimed", leaseOwner: owner },
      { $set: set, $unset: unset, $push: { history: { $each: [attempt], $slice: -HISTORY_LENGTH } } },
    );
    return res.matchedCount === 1;
  }

  async hold(id: string, owner: string): Promise<void> {
    await this.deliveries.updateOne(
      { _id: id, outbox: "claimed", leaseOwner: owner },
      { $set: { outbox: "held", state: "HELD" }, $unset: { leaseOwner: "", leaseUntil: "" } },
    );
  }

  async drop(id: string): Promise<void> {
    await this.deliveries.deleteOne({ _id: id });
  }

  async holdAll(webhookId: string): Promise<number> {
    const res = await this.deliveries.updateMany({ webhookId, outbox: "due" }, { $set: { outbox: "held", state: "HELD" } });
    return res.modifiedCount;
  }

  async releaseAll(webhookId: string, now: Date): Promise<number> {
    const res = await this.deliveries.updateMany(
      { webhookId, outbox: "held" },
      { $set: { outbox: "due", state: "PENDING", nextAttemptAt: now } },
    );
    return res.modifiedCount;
  }

  async find(workspaceId: string, webhookId: string, id: string): Promise<Delivery | null> {
    const doc = await this.deliveries.findOne({ _id: id, webhookId, workspaceId });
    return doc ? toDelivery(doc) : null;
  }

  async list(workspaceId: string, webhookId: string, limit: number, after?: DeliveryKey): Promise<Delivery[]> {
    const filter = after
      ? { $and: [{ webhookId, workspaceId }, { $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, _id: { $lt: after.id } }] }] }
      : { webhookId, workspaceId };
    const docs = await this.deliveries.find(filter, { sort: { createdAt: -1, _id: -1 }, limit });
    return docs.map(toDelivery);
  }

  async listForContact(workspaceId: string, contactId: string, limit: number): Promise<Delivery[]> {
    const docs = await this.deliveries.find({ workspaceId, contactId }, { sort: { createdAt: -1, _id: -1 }, limit });
    return docs.map(toDelivery);
  }

  async eraseFinishedForContact(workspaceId: string, contactId: string): Promise<number> {
    // Finished deliveries have left the outbox; one being sent or due keeps its body until it ends.
    const { deletedCount } = await this.deliveries.deleteMany({ workspaceId, contactId, outbox: { $exists: false } });
    return deletedCount;
  }

  async redeliver(workspaceId: string, webhookId: string, id: string, now: Date): Promise<Delivery | null> {
    const doc = await this.deliveries.findOneAndUpdate(
      { _id: id, webhookId, workspaceId, outbox: { $ne: "claimed" } },
      { $set: { outbox: "due", state: "PENDING", nextAttemptAt: now, retryStep: 0 } },
      { returnDocument: "after" },
    );
    return doc ? toDelivery(doc) : null;
  }

  async deleteForWebhook(webhookId: string): Promise<void> {
    await this.deliveries.deleteMany({ webhookId });
  }
}

/** Both stores, with their indexes in place; `keys` seal the webhooks' signing tokens. */
/** How long an email's tags are kept for its later opens and clicks. */
const EMAIL_TAGS_TTL_SECONDS = 90 * 86_400;

type EmailTagsDoc = { _id: string; tags: Tag[]; at: Date };

/** EmailTags over one collection, an entry per tagged email, forgotten after 90 days (a TTL index). */
export class CollectionEmailTags implements EmailTags {
  private readonly docs: Collection<EmailTagsDoc>;

  constructor(store: Store) {
    this.docs = store.collection<EmailTagsDoc>("email_tags");
  }

  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { at: 1 }, expireAfterSeconds: EMAIL_TAGS_TTL_SECONDS });
  }

  async remember(workspaceId: string, emailId: string, tags: Tag[]): Promise<void> {
    // The first event's tags win (an email's tags never change); later events only read.
    await this.docs.updateOne({ _id: `${workspaceId}:${emailId}` }, { $setOnInsert: { tags, at: new Date() } }, { upsert: true });
  }

  async find(workspaceId: string, emailId: string): Promise<Tag[] | undefined> {
    return (await this.docs.findOne({ _id: `${workspaceId}:${emailId}` }))?.tags;
  }
}

export async function openStores(store: Store, keys: SecretKeys) {
  const webhooks = new CollectionWebhookStore(store, keys);
  const deliveries = new CollectionDeliveryStore(store);
  const emailTags = new CollectionEmailTags(store);
  await Promise.all([webhooks.init(), deliveries.init(), emailTags.init()]);
  return { webhooks, deliveries, emailTags };
}
