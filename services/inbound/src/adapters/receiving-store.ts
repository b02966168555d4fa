import { DuplicateKeyError, type Collection, type Store } from "@mailroom/store/port.js";
import { appError } from "@mailroom/kit/errors.js";
import { domainTaken } from "../domain/receiving/config.js";
import type { InboundDomainRecord, InboundRuleRecord, ReceivedDetails, ReceivedEmailRecord, ReceivedListQuery } from "../domain/receiving/model.js";
import type { InboundDomainStore, InboundRuleStore, ReceivedEmailStore } from "../domain/ports.js";

type DomainDoc = Omit<InboundDomainRecord, "id"> & { _id: string };
type RuleDoc = Omit<InboundRuleRecord, "id"> & { _id: string };
type ReceivedDoc = Omit<ReceivedEmailRecord, "id"> & {
  _id: string;
  /** Lower-case addresses for the list's filters: every envelope, To and Cc recipient; the sender. */
  recipientKeys: string[];
  fromKey: string;
  details?: ReceivedDetails;
};

/** Listing leaves the bodies and headers out. */
const LIST_PROJECTION = { details: 0 } as const;

/**
 * The receiving records in the unit's own collections: `inbound_domains` (a unique index on
 * the domain: one workspace per domain), `inbound_rules` (unique per domain and match),
 * `received_emails` (by workspace, newest first; forgotten `retentionMs` after receipt by a
 * TTL index, as the object store forgets their bytes by its bucket's TTL).
 */
export class StoreReceiving {
  readonly domains: InboundDomainStore;
  readonly rules: InboundRuleStore;
  readonly received: ReceivedEmailStore;

  private constructor(store: Store) {
    const domains = store.collection<DomainDoc>("inbound_domains");
    const rules = store.collection<RuleDoc>("inbound_rules");
    this.domains = new Domains(domains, rules);
    this.rules = new Rules(rules);
    this.received = new Received(store.collection<ReceivedDoc>("received_emails"));
  }

  static async open(store: Store, retentionMs: number): Promise<StoreReceiving> {
    const domains = store.collection<DomainDoc>("inbound_domains");
    await domains.createIndex({ keys: { domain: 1 }, unique: true });
    await domains.createIndex({ keys: { workspaceId: 1 } });
    const rules = store.collection<RuleDoc>("inbound_rules");
    await rules.createIndex({ keys: { domainId: 1, match: 1 }, unique: true });
    const received = store.collection<ReceivedDoc>("received_emails");
    await received.createIndex({ keys: { workspaceId: 1, receivedAt: -1 } });
    await received.createIndex({ keys: { receivedAt: 1 }, expireAfterSeconds: Math.ceil(retentionMs / 1000) });
    return new StoreReceiving(store);
  }
}

class Domains implements InboundDomainStore {
  constructor(
    private readonly coll: Collection<DomainDoc>,
    private readonly rules: Collection<RuleDoc>,
  ) {}

  async insert(d: InboundDomainRecord): Promise<void> {
    try {
      await this.coll.insertOne(toDoc(d));
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      const other = await this.coll.findOne({ domain: d.domain });
      throw domainTaken(d.domain, other?.workspaceId === d.workspaceId);
    }
  }

  async find(workspaceId: string, id: string) {
    return fromDoc(await this.coll.findOne({ _id: id, workspaceId }));
  }

  async findByName(domain: string) {
    return fromDoc(await this.coll.findOne({ domain }));
  }

  async list(workspaceId: string) {
    return (await this.coll.find({ workspaceId }, { sort: { domain: 1 } })).map((d) => fromDoc(d)!);
  }

  async all() {
    return (await this.coll.find({})).map((d) => fromDoc(d)!);
  }

  async update(d: InboundDomainRecord): Promise<void> {
    const { _id, ...rest } = toDoc(d);
    const unset = (["verifiedAt", "lastCheckedAt"] as const).filter((k) => rest[k] === undefined);
    await this.coll.updateOne(
      { _id, workspaceId: d.workspaceId },
      { $set: rest, ...(unset.length ? { $unset: Object.fromEntries(unset.map((k) => [k, ""])) } : {}) },
    );
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    // Rules first: a deletion cut short leaves the domain, which a retry deletes again.
    await this.rules.deleteMany({ domainId: id, workspaceId });
    return (await this.coll.deleteOne({ _id: id, workspaceId })).deletedCount > 0;
  }
}

class Rules implements InboundRuleStore {
  constructor(private readonly coll: Collection<RuleDoc>) {}

  async insert(r: InboundRuleRecord): Promise<void> {
    try {
      await this.coll.insertOne(toDoc(r));
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      throw appError({ code: "inbound_rule_exists", httpStatus: 409, message: `The domain has a rule for "${r.match}" already; delete it first` });
    }
  }

  async list(workspaceId: string, domainId: string) {
    return (await this.coll.find({ workspaceId, domainId }, { sort: { createdAt: 1 } })).map((d) => fromDoc(d)!);
  }

  async all() {
    return (await this.coll.find({})).map((d) => fromDoc(d)!);
  }

  async delete(workspaceId: string, domainId: string, id: string): Promise<boolean> {
    return (await this.coll.deleteOne({ _id: id, workspaceId, domainId })).deletedCount > 0;
  }
}

class Received implements ReceivedEmailStore {
  constructor(private readonly coll: Collection<ReceivedDoc>) {}

  async find(workspaceId: string, id: string) {
    const doc = await this.coll.findOne({ _id: id, workspaceId }, { projection: LIST_PROJECTION });
    return doc ? receivedOf(doc) : null;
  }

  async save(email: ReceivedEmailRecord, details: ReceivedDetails | null): Promise<void> {
    const { _id, ...rest } = toDoc(email);
    const lower = (a: string) => a.toLowerCase();
    const set: Record<string, unknown> = {
      ...rest,
      recipientKeys: [...new Set([...email.envelopeTo.map(lower), ...email.to.map((a) => lower(a.address)), ...email.cc.map((a) => lower(a.address))])],
      fromKey: lower(email.from.address),
      ...(details ? { details } : {}),
    };
    for (const [k, v] of Object.entries(set)) if (v === undefined) delete set[k];
    // Most messages are new: one insert (the upsert's read and copy of a ~50 KB document saved);
    // a retry after a 451 finds its record and rewrites it.
    try {
      await this.coll.insertOne({ _id, ...set } as ReceivedDoc);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      await this.coll.updateOne({ _id, workspaceId: email.workspaceId }, { $set: set });
    }
  }

  async markDone(workspaceId: string, id: string, forwardedEmailId: string): Promise<void> {
    await this.coll.updateOne({ _id: id, workspaceId }, { $set: { done: true, forwardedEmailId } });
  }

  async details(workspaceId: string, id: string): Promise<ReceivedDetails | null> {
    const doc = await this.coll.findOne({ _id: id, workspaceId }, { projection: { details: 1 } });
    return doc?.details ?? null;
  }

  async list(workspaceId: string, q: ReceivedListQuery): Promise<ReceivedEmailRecord[]> {
    const filter: Record<string, unknown> = { workspaceId };
    const at: Record<string, Date> = {};
    if (q.since) at.$gte = q.since;
    if (q.after) {
      // (receivedAt, _id) strictly before the cursor: older, or as old with a smaller id.
      at.$lte = q.after.receivedAt;
      filter.$or = [{ receivedAt: { $lt: q.after.receivedAt } }, { _id: { $lt: q.after.id } }];
    }
    if (Object.keys(at).length) filter.receivedAt = at;
    if (q.to) filter.recipientKeys = q.to.toLowerCase();
    if (q.from) filter.fromKey = q.from.toLowerCase();
    const docs = await this.coll.find(filter, { sort: { receivedAt: -1, _id: -1 }, limit: q.limit, projection: LIST_PROJECTION });
    return docs.map(receivedOf);
  }
}

function toDoc<T extends { id: string }>(record: T): Omit<T, "id"> & { _id: string } {
  const { id, ...rest } = record;
  return { _id: id, ...rest };
}

function fromDoc<T extends { _id: string }>(doc: T | null): (Omit<T, "_id"> & { id: string }) | null {
  if (!doc) return null;
  const { _id, ...rest } = doc;
  return { id: _id, ...rest };
}

function receivedOf(doc: ReceivedDoc): ReceivedEmailRecord {
  const { _id, recipientKeys: _r, fromKey: _f, details: _d, ...rest } = doc;
  return { id: _id, ...rest };
}
