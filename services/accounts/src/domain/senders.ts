import { badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { parseMailbox, normalizeDomain } from "@mailroom/records/address.js";
import { isIP } from "node:net";
import { checkDirectSending, type DirectSendingCheck, type SendingDns } from "./direct-sending.js";
import { checkDomainRecords, dnsRecordsFor, isCheckedRecord, type DnsPolicy, type DnsRecordSpec } from "./dns-policy.js";
import { scopedId, type SenderDomain, type SenderEmail } from "@mailroom/records/model.js";
import type { DkimKeyGenerator, SenderRepository, TxtResolver } from "@mailroom/records/ports.js";
import type { Workspaces } from "./workspaces.js";
import { appErrorCode, requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

export interface DomainView extends SenderDomain {
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
    private readonly repo: SenderRepository,
    private readonly workspaces: Workspaces,
    private readonly resolver: TxtResolver,
    private readonly policy: DnsPolicy,
    private readonly generateKey: DkimKeyGenerator,
    private readonly now: Clock = systemClock,
    private readonly sendingDns?: SendingDns,
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

  async addEmail(workspaceId: string, email: string, verified: boolean): Promise<SenderEmail> {
    await this.workspaces.get(workspaceId);
    const address = this.parseAddress(email);
    const at = this.now();
    const id = scopedId(workspaceId, address);
    await this.repo.ensureEmail({ _id: id, workspaceId, email: address, createdAt: at, verified: false, verifiedAt: null });
    if (verified) await this.repo.markEmailVerified(id, at);
    const doc = await this.repo.findEmail(id);
    return doc!;
  }

  /** Adds a domain with a fresh DKIM key pair and returns the records to publish. */
  async addDomain(workspaceId: string, domainInput: string): Promise<DomainView> {
    await this.workspaces.get(workspaceId);
    const domain = this.parseDomain(domainInput);
    const existing = await this.repo.findDomain(workspaceId, scopedId(workspaceId, domain));
    if (existing) throw conflict("domain_exists", `Domain ${domain} was already added; use its records or verify it`);
    const pair = await this.generateKey();
    const doc: SenderDomain = {
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
    if (!(await this.repo.insertDomain(doc))) throw conflict("domain_exists", `Domain ${domain} was already added`);
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
    const changes: Partial<SenderDomain> = { recordsFound: check.found, verificationError: check.error, lastCheckedAt: at };
    // A domain once verified stays verified: a flaky lookup must not stop its mail.
    if (check.found.dkim && !doc.verified) Object.assign(changes, { verified: true, verifiedAt: at });
    const updated = await this.repo.updateDomain(doc._id, changes);
    return this.view(updated!);
  }

  /**
   * The DNS a domain of the workspace needs for delivery straight to MX hosts from `address`
   * (DESIGN §9.7): real lookups, now; nothing is stored (the console shows it as it is).
   */
  async checkDirectSending(workspaceId: string, domainInput: string, address: string, ehloName: string): Promise<DirectSendingCheck> {
    const doc = await this.requireDomain(workspaceId, domainInput);
    if (!isIP(address)) throw badRequest("invalid_request", `address ${JSON.stringify(address.slice(0, 100))} is not an IP address (MAILROOM_DELIVERY_LOCAL_ADDRESS)`);
    if (ehloName && !/^[a-z0-9.-]{1,253}$/i.test(ehloName)) throw badRequest("invalid_request", "ehlo_name is not a host name");
    if (!this.sendingDns) throw new Error("the accounts unit was built without the direct-sending DNS check");
    return checkDirectSending(this.sendingDns, this.policy, { domain: doc.domain, address, ehloName });
  }

  /** Admin override (development): verified without DNS; a domain gets a key pair if new. */
  async markDomainVerified(workspaceId: string, domainInput: string): Promise<DomainView> {
    await this.workspaces.get(workspaceId);
    const domain = this.parseDomain(domainInput);
    const id = scopedId(workspaceId, domain);
    let doc = await this.repo.findDomain(workspaceId, id);
    if (!doc) {
      try {
        await this.addDomain(workspaceId, domain);
      } catch (err) {
        if (appErrorCode(err) !== "domain_exists") throw err; // else: lost a race, it exists now
      }
      doc = await this.repo.findDomain(workspaceId, id);
    }
    if (!doc!.verified) {
      doc = await this.repo.updateDomain(doc!._id, { verified: true, verifiedAt: this.now(), verificationError: "" });
    }
    return this.view(doc!);
  }

  async markEmailVerified(workspaceId: string, email: string): Promise<SenderEmail> {
    return this.addEmail(workspaceId, email, true);
  }

  async list(workspaceId: string): Promise<{ emails: SenderEmail[]; domains: DomainView[] }> {
    requireWorkspaceId(workspaceId);
    const [emails, domains] = await Promise.all([
      this.repo.listEmails(workspaceId, { limit: 10_000 }),
      this.repo.listDomains(workspaceId, { limit: 10_000 }),
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

  private async verifiedLists(workspaceId: string): Promise<{ emails: string[]; domains: SenderDomain[] }> {
    const [emails, domains] = await Promise.all([
      this.repo.listEmails(workspaceId, { verifiedOnly: true, limit: 10_000 }),
      this.repo.listDomains(workspaceId, { verifiedOnly: true, limit: 10_000 }),
    ]);
    return { emails: emails.map((e) => e.email), domains };
  }

  private async requireDomain(workspaceId: string, domainInput: string): Promise<SenderDomain> {
    requireWorkspaceId(workspaceId);
    const domain = this.parseDomain(domainInput);
    const doc = await this.repo.findDomain(workspaceId, scopedId(workspaceId, domain));
    if (!doc) throw notFound("domain_not_found", `Domain ${domain} not found`);
    return doc;
  }

  private view(doc: SenderDomain): DomainView {
    const records = dnsRecordsFor(doc.domain, doc.selector, doc.publicKey, this.policy).map((r) => ({
      ...r,
      // The bounce domain's records are shown, not looked up: never "verified" here.
      verified: isCheckedRecord(r.purpose) && (doc.recordsFound[r.purpose] || (r.purpose === "dkim" && doc.verified)),
    }));
    return { ...doc, records };
  }
}
