import type { Collection, Filter, Store } from "@mailroom/store/port.js";
import { needsReseal, openStoredSecret, sealSecret, SECRET_PURPOSES, type SecretKeys } from "@mailroom/kit/secrets.js";
import type { SenderDomain, SenderEmail } from "@mailroom/records/model.js";
import type { SenderRepository } from "@mailroom/records/ports.js";
import { asDoc, ensureDoc, insertUnique, withoutId, type Stored } from "@mailroom/records/documents.js";

const DKIM_KEY_PURPOSE = SECRET_PURPOSES.dkimPrivateKey;

/**
 * Sender emails and domains. A domain's DKIM private key is sealed (kit/secrets) in the
 * store and opened on read, so the domain sees the PEM and no store file ever holds it.
 */
export class SenderStore implements SenderRepository {
  private constructor(
    private readonly emails: Collection<Stored<SenderEmail>>,
    private readonly domains: Collection<Stored<SenderDomain>>,
    private readonly keys: SecretKeys,
  ) {}

  static async open(store: Store, keys: SecretKeys): Promise<SenderStore> {
    const emails = store.collection<Stored<SenderEmail>>("sender_emails");
    const domains = store.collection<Stored<SenderDomain>>("domains");
    await Promise.all([emails.createIndex({ keys: { workspaceId: 1 } }), domains.createIndex({ keys: { workspaceId: 1 } })]);
    const senders = new SenderStore(emails, domains, keys);
    await senders.resealKeys();
    return senders;
  }

  /**
   * Seals plaintext keys left by older versions and reseals keys sealed under
   * MAILROOM_SECRET_PREVIOUS, so a rotation completes with one restart. Domains are few.
   */
  private async resealKeys(): Promise<void> {
    for (const doc of await this.domains.find({}, { projection: { privateKeyPem: 1 } })) {
      const stored = doc.privateKeyPem;
      if (!stored || !needsReseal(this.keys, DKIM_KEY_PURPOSE, stored)) continue;
      const sealed = this.seal(openStoredSecret(this.keys, DKIM_KEY_PURPOSE, stored));
      await this.domains.updateOne({ _id: doc._id, privateKeyPem: stored }, { $set: { privateKeyPem: sealed } });
    }
  }

  private seal(pem: string): string {
    return pem ? sealSecret(this.keys, DKIM_KEY_PURPOSE, pem) : pem;
  }

  private opened(doc: SenderDomain | null): SenderDomain | null {
    if (!doc?.privateKeyPem) return doc;
    return { ...doc, privateKeyPem: openStoredSecret(this.keys, DKIM_KEY_PURPOSE, doc.privateKeyPem) };
  }

  ensureEmail(email: SenderEmail): Promise<void> {
    return ensureDoc(this.emails, { _id: email._id }, { $setOnInsert: withoutId(email) });
  }

  async markEmailVerified(id: string, at: Date): Promise<void> {
    await this.emails.updateOne({ _id: id, verified: false }, { $set: { verified: true, verifiedAt: at } });
  }

  findEmail(id: string): Promise<SenderEmail | null> {
    return this.emails.findOne({ _id: id });
  }

  listEmails(workspaceId: string, opts: { verifiedOnly?: boolean; limit: number }): Promise<SenderEmail[]> {
    const filter: Filter = opts.verifiedOnly ? { workspaceId, verified: true } : { workspaceId };
    return this.emails.find(filter, { sort: { _id: 1 }, limit: opts.limit });
  }

  insertDomain(domain: SenderDomain): Promise<boolean> {
    return insertUnique(this.domains, asDoc({ ...domain, privateKeyPem: this.seal(domain.privateKeyPem) }));
  }

  async findDomain(workspaceId: string, id: string): Promise<SenderDomain | null> {
    return this.opened(await this.domains.findOne({ _id: id, workspaceId }));
  }

  async updateDomain(id: string, changes: Partial<Omit<SenderDomain, "_id" | "workspaceId">>): Promise<SenderDomain | null> {
    const set = changes.privateKeyPem === undefined ? changes : { ...changes, privateKeyPem: this.seal(changes.privateKeyPem) };
    return this.opened(await this.domains.findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: "after" }));
  }

  async listDomains(workspaceId: string, opts: { verifiedOnly?: boolean; limit: number }): Promise<SenderDomain[]> {
    const filter: Filter = opts.verifiedOnly ? { workspaceId, verified: true } : { workspaceId };
    const docs = await this.domains.find(filter, { sort: { _id: 1 }, limit: opts.limit });
    return docs.map((d) => this.opened(d)!);
  }
}
