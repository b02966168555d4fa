import { appError } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import type { Clock, InboundDomainStore, InboundRuleStore, Logger, MxLookup, SendingDomains } from "../ports.js";
import type { InboundDomainRecord, InboundRuleRecord } from "./model.js";
import type { InboundRouting } from "./routing.js";
import { addressParts, invalidForwardLoop, MAX_RULES_PER_DOMAIN, normalizeDomain, validateRule } from "./rules.js";

export interface InboundConfigDeps {
  domains: InboundDomainStore;
  rules: InboundRuleStore;
  routing: InboundRouting;
  mx: MxLookup;
  /** Who may claim a domain: a workspace whose verified sending domain it is (or is under). */
  sendingDomains: SendingDomains;
  clock: Clock;
  logger: Logger;
  /** The host the MX record must name (MAILROOM_INBOUND_MX_HOST) and the preference shown. */
  mxHost: string;
  mxPriority: number;
  /** Domains no workspace may claim (the MX host itself, the bounce domain). */
  reserved: string[];
}

/** 409: a domain belongs to one workspace; `ours`: this workspace has it already. */
export const domainTaken = (domain: string, ours: boolean) =>
  ours
    ? appError({ code: "inbound_domain_exists", httpStatus: 409, message: `${domain} is already an inbound domain of this workspace` })
    : appError({ code: "inbound_domain_taken", httpStatus: 409, message: `${domain} is an inbound domain of another workspace` });

export const domainNotFound = (id: string) => appError({ code: "inbound_domain_not_found", httpStatus: 404, message: `No inbound domain ${id} in this workspace` });

/**
 * Inbound domains and rules of a workspace (DESIGN §10.4). A domain is verified when one of
 * its MX records names the inbound host (real DNS: checked once at creation, again on
 * VerifyInboundDomain); mail is taken only for a verified domain, by its most specific rule.
 * Rules may be added while the domain is pending, so mail is routed from the moment the MX
 * record is published and verified.
 */
export class InboundConfig {
  constructor(private readonly deps: InboundConfigDeps) {}

  /** The MX record a domain must publish. */
  get mxHost(): string {
    return this.deps.mxHost;
  }
  get mxPriority(): number {
    return this.deps.mxPriority;
  }

  async createDomain(workspaceId: string, name: string): Promise<InboundDomainRecord> {
    const domain = normalizeDomain(name, this.deps.reserved);
    // Ownership first: a workspace that does not control the domain learns nothing of who has it.
    if (!(await this.deps.sendingDomains.verifiedFor(workspaceId, domain))) {
      throw appError({
        code: "domain_not_verified",
        httpStatus: 409,
        message: `${domain} is not a verified sending domain of this workspace, nor under one: add and verify it under Domains first (its DKIM record proves the domain is yours)`,
      });
    }
    const existing = await this.deps.domains.findByName(domain);
    if (existing) throw domainTaken(domain, existing.workspaceId === workspaceId);
    const record: InboundDomainRecord = {
      id: newId("ind"), workspaceId, domain, status: "pending", createdAt: this.deps.clock.now(), failure: "",
    };
    await this.check(record);
    await this.deps.domains.insert(record);
    await this.changed();
    return record;
  }

  listDomains(workspaceId: string): Promise<InboundDomainRecord[]> {
    return this.deps.domains.list(workspaceId);
  }

  async getDomain(workspaceId: string, id: string): Promise<InboundDomainRecord> {
    const domain = await this.deps.domains.find(workspaceId, id);
    if (!domain) throw domainNotFound(id);
    return domain;
  }

  async verifyDomain(workspaceId: string, id: string): Promise<InboundDomainRecord> {
    const domain = await this.getDomain(workspaceId, id);
    const before = domain.status;
    await this.check(domain);
    await this.deps.domains.update(domain);
    if (domain.status !== before) await this.changed();
    return domain;
  }

  async deleteDomain(workspaceId: string, id: string): Promise<void> {
    if (!(await this.deps.domains.delete(workspaceId, id))) throw domainNotFound(id);
    await this.changed();
  }

  async createRule(workspaceId: string, domainId: string, input: { match: string; action: string; forwardTo: string }): Promise<InboundRuleRecord> {
    const domain = await this.getDomain(workspaceId, domainId);
    const rule = validateRule(input);
    const forwardDomain = rule.forwardTo ? addressParts(rule.forwardTo)?.domain : undefined;
    if (forwardDomain && (this.deps.routing.isInboundDomain(forwardDomain) || forwardDomain === domain.domain)) throw invalidForwardLoop(forwardDomain);
    if ((await this.deps.rules.list(workspaceId, domainId)).length >= MAX_RULES_PER_DOMAIN) {
      throw appError({ code: "invalid_inbound_rule", httpStatus: 400, message: `a domain holds at most ${MAX_RULES_PER_DOMAIN} rules` });
    }
    const record: InboundRuleRecord = { id: newId("inr"), workspaceId, domainId, ...rule, createdAt: this.deps.clock.now() };
    await this.deps.rules.insert(record);
    await this.changed();
    return record;
  }

  async listRules(workspaceId: string, domainId: string): Promise<InboundRuleRecord[]> {
    await this.getDomain(workspaceId, domainId);
    return this.deps.rules.list(workspaceId, domainId);
  }

  async deleteRule(workspaceId: string, domainId: string, id: string): Promise<void> {
    await this.getDomain(workspaceId, domainId);
    if (!(await this.deps.rules.delete(workspaceId, domainId, id))) {
      throw appError({ code: "inbound_rule_not_found", httpStatus: 404, message: `No rule ${id} on inbound domain ${domainId}` });
    }
    await this.changed();
  }

  /**
   * Looks the MX records up and records the outcome on `domain`. A lookup that failed
   * (timeout, SERVFAIL) leaves a verified domain verified: only an answer can unverify it.
   */
  private async check(domain: InboundDomainRecord): Promise<void> {
    const now = this.deps.clock.now();
    domain.lastCheckedAt = now;
    let hosts: string[];
    try {
      hosts = await this.deps.mx.mx(domain.domain);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      this.deps.logger.info({ domain: domain.domain, code }, "inbound domain MX lookup failed");
      if (domain.status !== "verified") domain.failure = `DNS lookup failed (${code}); try again later`;
      return;
    }
    const target = this.deps.mxHost.toLowerCase();
    if (hosts.includes(target)) {
      if (domain.status !== "verified") domain.verifiedAt = now;
      domain.status = "verified";
      domain.failure = "";
      return;
    }
    domain.status = "pending";
    domain.verifiedAt = undefined;
    domain.failure = hosts.length ? `MX names other hosts: ${hosts.join(", ")} (publish MX ${this.deps.mxPriority} ${target})` : `no MX record (publish MX ${this.deps.mxPriority} ${target})`;
  }

  private async changed(): Promise<void> {
    await this.deps.routing.reload().catch((err) => this.deps.logger.warn({ err }, "inbound routing not reloaded after a change; the periodic refresh will"));
  }
}
