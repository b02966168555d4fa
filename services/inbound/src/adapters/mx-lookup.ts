import { Resolver } from "node:dns/promises";
import type { MxLookup } from "../domain/ports.js";

/** Answers that mean "no MX record" rather than "the lookup failed". */
const NO_RECORD = new Set(["ENOTFOUND", "ENODATA"]);

/**
 * MX lookups with node:dns, through MAILROOM_DNS_SERVERS ("127.0.0.1:5353,…") when set, else
 * the system's resolvers (as the accounts unit checks sending domains).
 */
export class DnsMxLookup implements MxLookup {
  private readonly resolver: Resolver;

  constructor(servers?: string, opts: { timeoutMs?: number; tries?: number } = {}) {
    this.resolver = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: opts.tries ?? 2 });
    const list = (servers ?? "").split(",").map((s) => s.trim()).filter(Boolean);
    if (list.length) this.resolver.setServers(list);
  }

  async mx(domain: string): Promise<string[]> {
    try {
      const records = await this.resolver.resolveMx(domain);
      return records.sort((a, b) => a.priority - b.priority).map((r) => r.exchange.toLowerCase().replace(/\.$/, ""));
    } catch (err) {
      if (NO_RECORD.has((err as NodeJS.ErrnoException).code ?? "")) return [];
      throw err;
    }
  }
}
