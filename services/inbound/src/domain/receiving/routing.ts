import type { Logger } from "../ports.js";
import type { InboundDomainStore, InboundRuleStore } from "../ports.js";
import type { InboundDomainRecord, InboundRuleRecord, RuleRoute } from "./model.js";
import { addressParts, matchRule } from "./rules.js";

interface DomainEntry {
  domain: InboundDomainRecord;
  rules: InboundRuleRecord[];
}

/**
 * Every workspace's inbound domains and rules in memory, so RCPT TO is answered without a
 * store read (a flood of unknown recipients costs a map lookup). A change made in this process
 * reloads it at once; `refreshEvery` reloads it periodically for the changes other inbound
 * processes made. Until the first load nothing is routed (RCPT gets 550, as for any unknown).
 */
export class InboundRouting {
  private byDomain = new Map<string, DomainEntry>();
  private loading: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly domains: InboundDomainStore,
    private readonly rules: InboundRuleStore,
    private readonly logger: Logger,
  ) {}

  /** Loads now; with `refreshEvery`, again every so many ms (unref'd: never keeps the process up). */
  async start(refreshEveryMs?: number): Promise<void> {
    await this.reload();
    if (refreshEveryMs) {
      this.timer = setInterval(() => {
        this.reload().catch((err) => this.logger.warn({ err }, "inbound routing not refreshed; keeping the last"));
      }, refreshEveryMs);
      this.timer.unref();
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Reads every domain and rule again; concurrent calls share a load, and a call during one loads once more after it. */
  async reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        do {
          this.again = false;
          const [domains, rules] = await Promise.all([this.domains.all(), this.rules.all()]);
          const byDomain = new Map<string, DomainEntry>();
          for (const d of domains) byDomain.set(d.domain, { domain: d, rules: [] });
          const byId = new Map([...byDomain.values()].map((e) => [e.domain.id, e]));
          for (const r of rules) byId.get(r.domainId)?.rules.push(r);
          this.byDomain = byDomain;
        } while (this.again);
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  /** The rule an address reaches at a verified inbound domain; undefined: refused at RCPT. */
  routeOf(address: string): RuleRoute | undefined {
    const parts = addressParts(address);
    const entry = parts && this.byDomain.get(parts.domain);
    if (!parts || !entry || entry.domain.status !== "verified") return undefined;
    const hit = matchRule(entry.rules, parts.local);
    if (!hit) return undefined;
    return {
      kind: "rule",
      address,
      workspaceId: entry.domain.workspaceId,
      domainId: entry.domain.id,
      ruleId: hit.rule.id,
      action: hit.rule.action,
      forwardTo: hit.rule.forwardTo,
      mailboxHash: hit.mailboxHash,
    };
  }

  /** Whether a domain is one of this server's inbound domains (any workspace, any status). */
  isInboundDomain(domain: string): boolean {
    return this.byDomain.has(domain.toLowerCase());
  }
}
