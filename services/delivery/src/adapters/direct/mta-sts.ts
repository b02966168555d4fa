import https from "node:https";
import tls from "node:tls";
import { LRUCache } from "lru-cache";
import { parsePolicy } from "mailauth/lib/mta-sts.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { isNotFound, type DnsResolver } from "./mx.js";
import type { StsPolicy, StsPolicySource } from "./policy.js";

export interface MtaStsOptions {
  /** HTTPS port of `mta-sts.<domain>` (443; another only for tests). */
  port?: number;
  /** Extra trusted CA certificates (PEM) for the policy host's certificate. */
  ca?: string;
  timeoutMs?: number;
  /** How long the `_mta-sts` TXT answer is trusted before it is asked again (a changed id fetches the policy anew). */
  txtTtlMs?: number;
  maxEntries?: number;
  now?: () => number;
  /** Fetches the policy text from `address` for `host` (unit tests); default HTTPS as RFC 8461 says. */
  fetchText?: (address: string, host: string) => Promise<string>;
}

interface Cached {
  id: string;
  policy: StsPolicy;
  expiresAt: number;
}

/** Policies bigger than this are not policies (RFC 8461 §3.3 suggests a limit of 64 KB). */
const MAX_POLICY_BYTES = 64 * 1024;

/**
 * MTA-STS policies (RFC 8461): the `_mta-sts.<domain>` TXT record names the policy's id; the
 * policy comes from `https://mta-sts.<domain>/.well-known/mta-sts.txt` (certificate verified,
 * no redirect followed) and is cached for its max_age, fetched again when the TXT id changes.
 * A cached policy stays in force until it expires even if the TXT record or the policy host
 * goes away (so an attacker who blocks them cannot downgrade); with none cached, a domain
 * whose policy cannot be had is treated as publishing none.
 *
 * The policy file is parsed by mailauth's parsePolicy; its fetchPolicy/getPolicy are not used:
 * they resolve through the system resolver's API shape, always use port 443 with Node's
 * bundled CAs (nothing to point a test at), and keep no cache of their own.
 */
export class MtaStsPolicies implements StsPolicySource {
  private readonly policies: LRUCache<string, Cached>;
  /** The TXT id seen lately per domain (`""`: none published), so a message does not cost a DNS query. */
  private readonly ids: LRUCache<string, string>;
  private readonly inflight = new Map<string, Promise<StsPolicy | undefined>>();
  private readonly now: () => number;

  constructor(
    private readonly dns: DnsResolver,
    private readonly logger: Logger,
    private readonly opts: MtaStsOptions = {},
  ) {
    this.policies = new LRUCache({ max: opts.maxEntries ?? 10_000 });
    this.ids = new LRUCache({ max: opts.maxEntries ?? 10_000, ttl: opts.txtTtlMs ?? 300_000 });
    this.now = opts.now ?? Date.now;
  }

  async policyFor(domain: string): Promise<StsPolicy | undefined> {
    // Concurrent sends to one domain share one look-up (and one fetch).
    let pending = this.inflight.get(domain);
    if (!pending) {
      pending = this.lookUp(domain).finally(() => this.inflight.delete(domain));
      this.inflight.set(domain, pending);
    }
    return pending;
  }

  private async lookUp(domain: string): Promise<StsPolicy | undefined> {
    const cached = this.policies.get(domain);
    const fresh = cached && cached.expiresAt > this.now() ? cached : undefined;
    let id: string | undefined;
    try {
      id = await this.policyId(domain);
    } catch (err) {
      this.logger.debug({ domain, err: (err as Error).message }, "MTA-STS: TXT lookup failed");
      return fresh?.policy;
    }
    if (!id) return fresh?.policy;
    if (fresh && fresh.id === id) return fresh.policy;
    try {
      const { policy, maxAgeS } = await this.fetch(domain);
      this.policies.set(domain, { id, policy, expiresAt: this.now() + maxAgeS * 1000 });
      return policy;
    } catch (err) {
      this.logger.warn({ domain, err: (err as Error).message }, "MTA-STS: the policy could not be fetched");
      return fresh?.policy;
    }
  }

  private async policyId(domain: string): Promise<string | undefined> {
    const known = this.ids.get(domain);
    if (known !== undefined) return known || undefined;
    let records: string[][];
    try {
      records = await this.dns.resolveTxt(`_mta-sts.${domain}`);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      records = [];
    }
    const sts = records.map((chunks) => chunks.join("").trim()).filter((r) => /^v=STSv1\s*(;|$)/.test(r));
    // RFC 8461 §3.1: several records, or none, mean no policy.
    const id = sts.length === 1 ? /(?:^|;)\s*id=([A-Za-z0-9]{1,32})\s*(?:;|$)/.exec(sts[0]!)?.[1] : undefined;
    this.ids.set(domain, id ?? "");
    return id;
  }

  private async fetch(domain: string): Promise<{ policy: StsPolicy; maxAgeS: number }> {
    const host = `mta-sts.${domain}`;
    const addresses = await this.dns.resolve4(host, { ttl: true }).catch(async (err: unknown) => {
      if (!isNotFound(err)) throw err;
      return this.dns.resolve6(host, { ttl: true });
    });
    if (!addresses.length) throw new Error(`${host} has no address`);
    const body = await (this.opts.fetchText ?? ((a: string, h: string) => this.get(a, h)))(addresses[0]!.address, host);
    const parsed = parsePolicy(body) as { mode: StsPolicy["mode"]; mx?: string[]; maxAge: number };
    return { policy: { mode: parsed.mode, mx: parsed.mx ?? [] }, maxAgeS: parsed.maxAge };
  }

  private get(address: string, host: string): Promise<string> {
    const { port = 443, ca, timeoutMs = 15_000 } = this.opts;
    return new Promise((resolve, reject) => {
      const req = https.get(
        {
          host: address,
          port,
          path: "/.well-known/mta-sts.txt",
          servername: host,
          headers: { host },
          rejectUnauthorized: true,
          ...(ca ? { ca: [...tls.rootCertificates, ca] } : {}),
          timeout: timeoutMs,
          agent: false,
        },
        (res) => {
          // RFC 8461 §3.3: 200 only (no redirect), text/plain.
          if (res.statusCode !== 200) {
            res.resume();
            reject(new Error(`https://${host}/.well-known/mta-sts.txt answered ${res.statusCode}`));
            return;
          }
          if (!/^text\/plain\b/i.test(res.headers["content-type"] ?? "")) {
            res.resume();
            reject(new Error(`https://${host}/.well-known/mta-sts.txt is ${res.headers["content-type"] ?? "untyped"}, not text/plain`));
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on("data", (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_POLICY_BYTES) req.destroy(new Error(`https://${host}/.well-known/mta-sts.txt is over ${MAX_POLICY_BYTES} bytes`));
            else chunks.push(chunk);
          });
          res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`https://${host}/.well-known/mta-sts.txt: no answer within ${timeoutMs} ms`)));
      req.on("error", reject);
    });
  }
}
