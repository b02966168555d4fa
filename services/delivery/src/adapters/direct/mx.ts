import { Resolver } from "node:dns/promises";
import net from "node:net";
import { LRUCache } from "lru-cache";
import { SmtpFailure } from "../../domain/ports.js";

/** One address of one MX host, in the order they are tried. */
export interface MxTarget {
  /** The MX host's name (TLS server name, MTA-STS match); the domain itself for an A/AAAA fallback. */
  host: string;
  address: string;
  preference: number;
}

/** The resolver calls this module makes (node:dns's promise Resolver has them). */
export interface DnsResolver {
  resolveMx(name: string): Promise<Array<{ exchange: string; priority: number }>>;
  resolve4(name: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>;
  resolve6(name: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>;
  resolveTxt(name: string): Promise<string[][]>;
}

/** A resolver asking `servers` (`ip` or `ip:port`), or the system's when empty. */
export function createDnsResolver(servers: readonly string[], opts: { timeoutMs?: number; tries?: number } = {}): DnsResolver {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 3_000, tries: opts.tries ?? 2 });
  if (servers.length) resolver.setServers([...servers]);
  return resolver;
}

const NOT_FOUND = new Set(["ENOTFOUND", "ENODATA"]);
const codeOf = (err: unknown) => (err as { code?: string }).code ?? "";

/** No such name, or no records of the type: an answer, not a failure. */
export const isNotFound = (err: unknown) => NOT_FOUND.has(codeOf(err));

/** A DNS failure worth retrying (SERVFAIL, timeout, refused): temporary, code 0. */
function dnsFailure(what: string, err: unknown): SmtpFailure {
  return new SmtpFailure(`DNS lookup of ${what} failed: ${codeOf(err) || (err as Error).message}`, 0, false, true);
}

/** A permanent refusal of the recipient's domain (never tried again). */
function unroutable(message: string, code: number): SmtpFailure {
  return new SmtpFailure(message, code, true, true);
}

type Entry = { targets: MxTarget[] } | { failure: { message: string; code: number } };

export interface MxLookupOptions {
  /** Only addresses of this family (a fixed source address can't reach the other). */
  family?: 4 | 6;
  /** Longest time an answer is kept (node:dns gives no TTL for MX records; addresses' TTLs cap it too). */
  maxTtlMs?: number;
  /** How long "no such domain" / null MX answers are kept. */
  negativeTtlMs?: number;
  maxEntries?: number;
}

/**
 * Where mail for a domain goes (RFC 5321 §5.1): its MX hosts by preference (equal ones
 * shuffled), each host's addresses (IPv4 first); with no MX record, the domain's own
 * A/AAAA addresses. A null MX (`MX 0 .`, RFC 7505), a domain that does not exist or that
 * has no address at all is refused for good (5xx about the recipient); a DNS failure
 * (SERVFAIL, timeout) is temporary. Answers are cached, bounded, for the addresses' TTL.
 */
export class MxLookup {
  private readonly cache: LRUCache<string, Entry>;
  private readonly inflight = new Map<string, Promise<Entry>>();

  constructor(
    private readonly dns: DnsResolver,
    private readonly opts: MxLookupOptions = {},
  ) {
    this.cache = new LRUCache({ max: opts.maxEntries ?? 10_000 });
  }

  async targets(domain: string): Promise<MxTarget[]> {
    const key = domain.toLowerCase();
    let entry = this.cache.get(key);
    if (!entry) {
      // Concurrent sends to a domain not yet cached share one lookup.
      let pending = this.inflight.get(key);
      if (!pending) {
        pending = this.lookUp(key)
          .then(({ entry: found, ttlMs }) => {
            this.cache.set(key, found, { ttl: Math.max(1, ttlMs) });
            return found;
          })
          .finally(() => this.inflight.delete(key));
        this.inflight.set(key, pending);
      }
      entry = await pending;
    }
    if ("failure" in entry) throw unroutable(entry.failure.message, entry.failure.code);
    return entry.targets;
  }

  private async lookUp(domain: string): Promise<{ entry: Entry; ttlMs: number }> {
    const maxTtl = this.opts.maxTtlMs ?? 300_000;
    const negative = (message: string, code: number) => ({ entry: { failure: { message, code } }, ttlMs: this.opts.negativeTtlMs ?? 60_000 });
    let mx: Array<{ exchange: string; priority: number }>;
    try {
      mx = await this.dns.resolveMx(domain);
    } catch (err) {
      if (codeOf(err) === "ENOTFOUND") return negative(`5.1.2 the domain ${domain} does not exist (NXDOMAIN)`, 550);
      if (codeOf(err) !== "ENODATA") throw dnsFailure(`MX ${domain}`, err);
      mx = [];
    }
    // RFC 7505: a single MX with the root as exchange says the domain takes no mail.
    if (mx.some((m) => m.exchange === "" || m.exchange === ".")) {
      return negative(`5.1.10 the domain ${domain} accepts no mail (null MX)`, 556);
    }
    // No MX: the domain itself is the implicit MX of preference 0.
    const hosts = mx.length ? byPreference(mx) : [{ exchange: domain, priority: 0 }];
    const targets: MxTarget[] = [];
    let ttlMs = maxTtl;
    let lastError: unknown;
    const resolved = await Promise.allSettled(hosts.map((h) => this.addresses(h.exchange)));
    resolved.forEach((r, i) => {
      const h = hosts[i]!;
      // One MX host that does not resolve: the others are tried.
      if (r.status === "rejected") lastError = r.reason;
      else
        for (const a of r.value) {
          targets.push({ host: h.exchange.toLowerCase(), address: a.address, preference: h.priority });
          ttlMs = Math.min(ttlMs, a.ttl * 1000);
        }
    });
    if (!targets.length) {
      if (lastError && !isNotFound(lastError)) throw dnsFailure(`the addresses of ${domain}'s mail hosts`, lastError);
      return negative(`5.1.2 no address for ${mx.length ? `the mail hosts of ${domain}` : domain}`, 550);
    }
    return { entry: { targets }, ttlMs };
  }

  private async addresses(host: string): Promise<Array<{ address: string; ttl: number }>> {
    if (net.isIP(host)) return [{ address: host, ttl: 3600 }];
    const family = this.opts.family;
    const lookups = [family !== 6 ? this.dns.resolve4(host, { ttl: true }) : undefined, family !== 4 ? this.dns.resolve6(host, { ttl: true }) : undefined];
    const results = await Promise.allSettled(lookups.map((l) => l ?? Promise.resolve([])));
    const found = results.flatMap((r) => (r.status === "fulfilled" ? r.value : []));
    if (found.length) return found;
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    return [];
  }
}

/** Lowest preference first; hosts of equal preference in random order (RFC 5321 §5.1). */
function byPreference<T extends { priority: number }>(mx: T[]): T[] {
  return mx
    .map((m) => ({ m, r: Math.random() }))
    .sort((a, b) => a.m.priority - b.m.priority || a.r - b.r)
    .map(({ m }) => m);
}
