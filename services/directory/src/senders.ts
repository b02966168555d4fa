import { badRequest, conflict, errorInfoOf, notFound } from "../../kit/src/errors.js";
import { DuplicateKeyError } from "../../kit/src/store/port.js";
import { parseMailbox, normalizeDomain } from "./address.js";
import { checkDomainRecords, dnsRecordsFor, generateDkimKeyPair, type DkimKeyPair, type DnsPolicy, type DnsRecordSpec, type TxtResolver } from "./dns.js";
import { ensureDoc, scopedId, type DirectoryRepos, type DomainDoc, type SenderEmailDoc } from "./store.js";
import type { Workspaces } from "./workspaces.js";
import { requireWorkspaceId, systemClock, type Clock } from "./validation.js";

export interface DomainView extends DomainDoc {
  records: Array<DnsRecordSpec & { verified: boolean }>;
}

export interface SenderCheck {
  allowed: boolean;
  address: string;
  name: string;
  allowedEmails: string[];
  allowedDomains: string[];
  dkim?: { domain: string; selector: string; privateKeyPem: string };
}

/**
 * Sender identities: addresses verified one by one, and domains proven by DNS (DKIM).
 * Addresses keep their local part as given and compare case-insensitively on the domain.
 */
export class Senders {
  constructor(
    private readonly repos: DirectoryRepos,
    private readonly workspaces: Workspaces,
    private readonly resolver: TxtResolver,
    private readonly policy: DnsPolicy,
    private readonly now: Clock = systemClock,
    private readonly generateKey: () => Promise<DkimKeyPair> = generateDkimKeyPair,
  ) {}

  private parseAddress(input: string, field = "email"): string {
    const box = parseMailbox(input);
    if (!box || box.name) throw badRequest("invalid_email", `${field} "${input}" is not a valid email address`);
    return box.address;
  }

  private parseDomain(input: string): string {
    const d = normalizeDomain(input);
    if (!d) throw badRequest("invalid_domain", `"${input}" is not a valid domain name`);
    return d;
  }

  async addEmail(workspaceId: string, email: string, verified: boolean): Promise<SenderEmailDoc> {
    await this.workspaces.get(workspaceId);
    const address = this.parseAddress(email);
    const at = this.now();
    const id = scopedId(workspaceId, address);
    await ensureDoc(this.repos.senderEmails, { _id: id }, { $setOnInsert: { workspaceId, email: address, createdAt: at, verified: false, verifiedAt: null } });
    if (verified) await this.repos.senderEmails.updateOne({ _id: id, verified: false }, { $set: { verified: true, verifiedAt: at } });
    const doc = await this.repos.senderEmails.findOne({ _id: id });
    return doc!;
  }

  /** Adds a domain with a fresh DKIM key pair and returns the records to publish. */
  async addDomain(workspaceId: string, domainInput: string): Promise<DomainView> {
    await this.workspaces.get(workspaceId);
    const domain = this.parseDomain(domainInput);
    const existing = await this.repos.domains.findOne({ _id: scopedId(workspaceId, domain) });
    if (existing) throw conflict("domain_exists", `Domain ${domain} was already added; use its records or verify it`);
    const pair = await this.generateKey();
    const doc: DomainDoc = {
      _id: scopedId(workspaceId, domain),
      workspaceId,
      domain,
      verified: false,
      selector: pair.selector,
      publicKey: pair.publicKey,
      privateKeyPem: pair.privateKeyPem,
      recordsFound: { dkim: false, spf: false, dmarc: false },
      verificationError: "",
      lastCheckedAt: null,
      createdAt: this.now(),
      verifiedAt: null,
    };
    try {
      await this.repos.domains.insertOne(doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw conflict("domain_exists", `Domain ${domain} was already added`);
      throw err;
    }
    return this.view(doc);
  }

  async getDomain(workspaceId: string, domainInput: string): Promise<DomainView> {
    return this.view(await this.requireDomain(workspaceId, domainInput));
  }

  /** Real DNS lookups; marks the domain verified when its DKIM record carries our key. */
  async verifyDomain(workspaceId: string, domainInput: string): Promise<DomainView> {
    const doc = await this.requireDomain(workspaceId, domainInput);
    const check = await checkDomainRecords(this.resolver, doc.domain, doc.selector, doc.publicKey, this.policy);
    const at = this.now();
    const set: Record<string, unknown> = { recordsFound: check.found, verificationError: check.error, lastCheckedAt: at };
    // A domain once verified stays verified: a flaky lookup must not stop its mail.
    if (check.found.dkim && !doc.verified) Object.assign(set, { verified: true, verifiedAt: at });
    const updated = await this.repos.domains.findOneAndUpdate({ _id: doc._id }, { $set: set }, { returnDocument: "after" });
    return this.view(updated!);
  }

  /** Admin override (development): verified without DNS; a domain gets a key pair if new. */
  async markDomainVerified(workspaceId: string, domainInput: string): Promise<DomainView> {
    await this.workspaces.get(workspaceId);
    const domain = this.parseDomain(domainInput);
    let doc = await this.repos.domains.findOne({ _id: scopedId(workspaceId, domain) });
    if (!doc) {
      try {
        await this.addDomain(workspaceId, domain);
      } catch (err) {
        if (errorInfoOf(err)?.code !== "domain_exists") throw err; // else: lost a race, it exists now
      }
      doc = await this.repos.domains.findOne({ _id: scopedId(workspaceId, domain) });
    }
    if (!doc!.verified) {
      doc = await this.repos.domains.findOneAndUpdate(
        { _id: doc!._id },
        { $set: { verified: true, verifiedAt: this.now(), verificationError: "" } },
        { returnDocument: "after" },
      );
    }
    return this.view(doc!);
  }

  async markEmailVerified(workspaceId: string, email: string): Promise<SenderEmailDoc> {
    return this.addEmail(workspaceId, email, true);
  }

  async list(workspaceId: string): Promise<{ emails: SenderEmailDoc[]; domains: DomainView[] }> {
    requireWorkspaceId(workspaceId);
    const [emails, domains] = await Promise.all([
      this.repos.senderEmails.find({ workspaceId }, { sort: { _id: 1 }, limit: 10_000 }),
      this.repos.domains.find({ workspaceId }, { sort: { _id: 1 }, limit: 10_000 }),
    ]);
    return { emails, domains: domains.map((d) => this.view(d)) };
  }

  /**
   * Is `from` (address or "Name <address>") allowed for the workspace? It is when the
   * address is a verified sender (domain compared case-insensitively) or lies on a verified
   * domain. The DKIM key comes along when the address's domain is verified and has one.
   */
  async check(workspaceId: string, from: string): Promise<SenderCheck> {
    requireWorkspaceId(workspaceId);
    const { emails, domains } = await this.verifiedLists(workspaceId);
    const box = parseMailbox(from);
    if (!box) {
      throw badRequest("invalid_from", `"from" is not a valid email address: ${JSON.stringify(String(from).slice(0, 200))}`, {
        allowedEmails: emails,
        allowedDomains: domains.map((d) => d.domain),
      });
    }
    const domainDoc = domains.find((d) => d.domain === box.domain);
    const allowed = emails.includes(box.address) || domainDoc !== undefined;
    return {
      allowed,
      address: box.address,
      name: box.name,
      allowedEmails: allowed ? [] : emails,
      allowedDomains: allowed ? [] : domains.map((d) => d.domain),
      dkim: allowed && domainDoc?.privateKeyPem
        ? { domain: domainDoc.domain, selector: domainDoc.selector, privateKeyPem: domainDoc.privateKeyPem }
        : undefined,
    };
  }

  private async verifiedLists(workspaceId: string): Promise<{ emails: string[]; domains: DomainDoc[] }> {
    const [emails, domains] = await Promise.all([
      this.repos.senderEmails.find({ workspaceId, verified: true }, { sort: { _id: 1 }, limit: 10_000 }),
      this.repos.domains.find({ workspaceId, verified: true }, { sort: { _id: 1 }, limit: 10_000 }),
    ]);
    return { emails: emails.map((e) => e.email), domains };
  }

  private async requireDomain(workspaceId: string, domainInput: string): Promise<DomainDoc> {
    requireWorkspaceId(workspaceId);
    const domain = this.parseDomain(domainInput);
    const doc = await this.repos.domains.findOne({ _id: scopedId(workspaceId, domain), workspaceId });
    if (!doc) throw notFound("domain_not_found", `Domain ${domain} not found`);
    return doc;
  }

  private view(doc: DomainDoc): DomainView {
    const records = dnsRecordsFor(doc.domain, doc.selector, doc.publicKey, this.policy).map((r) => ({
      ...r,
      verified: doc.recordsFound[r.purpose] || (r.purpose === "dkim" && doc.verified),
    }));
    return { ...doc, records };
  }
}
