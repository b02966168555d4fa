import { randomBytes } from "node:crypto";
import { DuplicateKeyError, type Collection, type Store } from "@mailroom/store/port.js";
import { GroupCommit } from "./group-commit.js";
import type { ClaimResult, DeliveriesRepository, DeliveryRecord, Outcome } from "../domain/ports.js";

/** How long the ledger remembers a delivery (redeliveries come within minutes). */
const KEEP_SECONDS = 14 * 24 * 3600;

/** Claim ids unique to this process and call (a random prefix, then a counter). */
const CLAIM_PREFIX = `${randomBytes(6).toString("hex")}.`;
let claimCounter = 0;

/** One SMTP-transaction claim per delivery id ("deliveries" collection). */
type ClaimDoc = {
  _id: string;
  workspaceId: string;
  /** "failed" only for deliveries given up before any SMTP transaction. */
  state: "sending" | "deferred" | "failed";
  attempts: number;
  claimedBy?: string;
  claimedAt?: Date;
  /** Tells a claim of ours from another worker's when a batched insert is replayed. */
  claimId?: string;
  outcome?: Outcome;
  createdAt: Date;
  updatedAt: Date;
};

/** The final outcome of a delivery ("delivery_outcomes"): written once, sent wins. */
type OutcomeDoc = {
  _id: string;
  workspaceId: string;
  type: "sent" | "bounced" | "failed";
  detail: string;
  smtpCode: number;
  attempt: number;
  /** The route that carried it, so a final event republished after a crash still names it. */
  route?: string;
  /** Written by releases that suppressed bounces themselves; no longer read. */
  suppressed?: boolean;
  at: Date;
};

/**
 * The exactly-once ledger. A delivery is claimed by creating its claim document (or, for
 * a deferred or abandoned one, by compare-and-set on it) right before the SMTP
 * transaction, and its final outcome is recorded right after it, before the job is acked.
 *
 * Final outcomes live in their own collection so that both the claims of new deliveries
 * and the outcomes can be written with group commit (one insertMany for everything the
 * concurrent jobs of this process asked for meanwhile): per-message writes are what
 * limits throughput on the embedded store, whose writes are serialised.
 */
export class StoreDeliveries implements DeliveriesRepository {
  private readonly claims: Collection<ClaimDoc>;
  private readonly outcomes: Collection<OutcomeDoc>;
  private readonly newClaims = new GroupCommit<ClaimDoc, boolean>((docs) => this.insertClaims(docs));
  private readonly newOutcomes = new GroupCommit<OutcomeDoc, void>((docs) => this.insertOutcomes(docs));

  constructor(store: Store) {
    this.claims = store.collection<ClaimDoc>("deliveries");
    this.outcomes = store.collection<OutcomeDoc>("delivery_outcomes");
  }

  async init(): Promise<void> {
    await this.claims.createIndex({ keys: { updatedAt: 1 }, expireAfterSeconds: KEEP_SECONDS });
    await this.outcomes.createIndex({ keys: { at: 1 }, expireAfterSeconds: KEEP_SECONDS });
  }

  async get(deliveryId: string): Promise<DeliveryRecord | null> {
    const outcome = await this.outcomes.findOne({ _id: deliveryId });
    if (outcome) return fromOutcome(outcome);
    return this.claims.findOne({ _id: deliveryId });
  }

  async getMany(deliveryIds: readonly string[]): Promise<Map<string, DeliveryRecord>> {
    const found = new Map<string, DeliveryRecord>();
    if (deliveryIds.length === 0) return found;
    const ids = [...deliveryIds];
    const [outcomes, claims] = await Promise.all([
      this.outcomes.find({ _id: { $in: ids } }),
      this.claims.find({ _id: { $in: ids } }),
    ]);
    for (const c of claims) found.set(c._id, c);
    // A final outcome wins over the claim document it ended.
    for (const o of outcomes) found.set(o._id, fromOutcome(o));
    return found;
  }

  async claim(deliveryId: string, workspaceId: string, worker: string, now: Date, staleBefore: Date): Promise<ClaimResult> {
    // The common case, a delivery seen for the first time, is claimed by creating it.
    const created = await this.newClaims.add({
      _id: deliveryId, workspaceId, state: "sending", attempts: 1, claimedBy: worker, claimedAt: now,
      claimId: `${CLAIM_PREFIX}${(claimCounter += 1)}`, createdAt: now, updatedAt: now,
    });
    if (created) return { claimed: true, attempts: 1 };

    const outcome = await this.outcomes.findOne({ _id: deliveryId });
    if (outcome) return { claimed: false, record: fromOutcome(outcome) };
    const taken = await this.claims.findOneAndUpdate(
      { _id: deliveryId, $or: [{ state: "deferred" }, { state: "sending", claimedAt: { $lt: staleBefore } }] },
      { $set: { state: "sending", claimedBy: worker, claimedAt: now, updatedAt: now }, $inc: { attempts: 1 } },
      { returnDocument: "after" },
    );
    if (taken) return { claimed: true, attempts: taken.attempts };
    return { claimed: false, record: await this.claims.findOne({ _id: deliveryId }) };
  }

  async refreshClaims(deliveryIds: readonly string[], worker: string, now: Date): Promise<void> {
    if (deliveryIds.length === 0) return;
    // A claim still being created (newClaims batches its inserts) matches nothing here: it is new anyway.
    await this.claims.updateMany(
      { _id: { $in: [...deliveryIds] }, state: "sending", claimedBy: worker },
      { $set: { claimedAt: now } },
    );
  }

  async markDeferred(deliveryId: string, worker: string, outcome: Outcome, now: Date): Promise<void> {
    await this.claims.updateOne(
      { _id: deliveryId, state: "sending", claimedBy: worker },
      { $set: { state: "deferred", outcome, updatedAt: now }, $unset: { claimedBy: "", claimedAt: "" } },
    );
  }

  async markFinal(deliveryId: string, workspaceId: string, outcome: Outcome, now: Date): Promise<void> {
    if (outcome.attempt === 0) {
      // Given up before any SMTP transaction: a claim document in "failed" keeps a later
      // copy of the job from claiming it as new.
      try {
        await this.claims.insertOne({ _id: deliveryId, workspaceId, state: "failed", attempts: 0, outcome, createdAt: now, updatedAt: now });
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
    await this.newOutcomes.add({
      _id: deliveryId, workspaceId, type: outcome.type as OutcomeDoc["type"], detail: outcome.detail,
      smtpCode: outcome.smtpCode, attempt: outcome.attempt, at: now,
      ...(outcome.route ? { route: outcome.route } : {}),
    });
  }

  /** true for each claim document this call created. */
  private async insertClaims(docs: ClaimDoc[]): Promise<boolean[]> {
    try {
      await this.claims.insertMany(docs);
      return docs.map(() => true);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    // Some already existed (redelivered jobs, or one id twice in the batch), and an
    // ordered insertMany may have stored the documents before the first duplicate.
    const created: boolean[] = [];
    for (const doc of docs) {
      const existing = await this.claims.findOne({ _id: doc._id });
      if (existing) {
        created.push(existing.claimId === doc.claimId);
        continue;
      }
      try {
        await this.claims.insertOne(doc);
        created.push(true);
      } catch (e) {
        if (!(e instanceof DuplicateKeyError)) throw e;
        created.push(false);
      }
    }
    return created;
  }

  private async insertOutcomes(docs: OutcomeDoc[]): Promise<void[]> {
    try {
      await this.outcomes.insertMany(docs);
      return docs.map(() => undefined);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    for (const doc of docs) {
      if (await this.outcomes.findOne({ _id: doc._id, type: doc.type, attempt: doc.attempt })) continue; // stored before the duplicate
      try {
        await this.outcomes.insertOne(doc);
      } catch (e) {
        if (!(e instanceof DuplicateKeyError)) throw e;
        // An outcome was already recorded. "sent" is the truth whatever came before it.
        if (doc.type === "sent") {
          const { _id, ...rest } = doc;
          await this.outcomes.updateOne({ _id, type: { $ne: "sent" } }, { $set: rest });
        }
      }
    }
    return docs.map(() => undefined);
  }
}

function fromOutcome(o: OutcomeDoc): DeliveryRecord {
  return {
    _id: o._id,
    workspaceId: o.workspaceId,
    state: o.type,
    attempts: o.attempt,
    outcome: { type: o.type, detail: o.detail, smtpCode: o.smtpCode, attempt: o.attempt, ...(o.route ? { route: o.route } : {}) },
    createdAt: o.at,
    updatedAt: o.at,
  };
}
