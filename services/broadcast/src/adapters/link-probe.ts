import http from "node:http";
import https from "node:https";
import net from "node:net";
import { LRUCache } from "lru-cache";
import { hostOf, NetworkPolicy, TargetRefusedError } from "@mailroom/kit/network-policy.js";
import type { LinkProbe, LinkRedirect, LinkResult } from "../domain/check/ports.js";

export interface LinkProbeOptions {
  /** One link's whole chain of requests (HEAD, GET fallback, redirects). */
  timeoutMs: number;
  /** Links fetched at once by one check. */
  concurrency: number;
  /** How long a link's result is reused (by any check: a URL's answer is the same for everyone). */
  cacheMs: number;
  /**
   * Time after which a check starts no more links (those left are reported unchecked), so a
   * check answers within the callers' 30 s: this plus one link's timeout.
   */
  budgetMs: number;
  maxRedirects: number;
}

const DEFAULTS: LinkProbeOptions = { timeoutMs: 5_000, concurrency: 4, cacheMs: 3_600_000, maxRedirects: 10, budgetMs: 18_000 };
const USER_AGENT = "Mailroom-LinkCheck/1.0 (pre-send check; +https://github.com/mailroom)";

/**
 * The pre-send check's link fetcher (DESIGN §10.5): HEAD, then GET when HEAD is refused or
 * fails (many servers answer HEAD 405 or 404), redirects followed by hand up to
 * `maxRedirects`, every hop through the SSRF guard the webhooks use (kit's NetworkPolicy:
 * a literal address is judged before the request, a name by what it resolves to at connect
 * time), so a link to a private or loopback address is reported as refused and never
 * fetched. Bodies are never read. Time-bounded per link, a few at a time, cached for an hour.
 */
export class HttpLinkProbe implements LinkProbe {
  private readonly options: LinkProbeOptions;
  private readonly cache: LRUCache<string, LinkResult>;
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(private readonly policy: NetworkPolicy = new NetworkPolicy(), options: Partial<LinkProbeOptions> = {}) {
    this.options = { ...DEFAULTS, ...options };
    this.cache = new LRUCache({ max: 10_000, ttl: this.options.cacheMs });
    const lookup = policy.connectLookup;
    this.agents = { http: new http.Agent({ lookup } as http.AgentOptions), https: new https.Agent({ lookup } as https.AgentOptions) };
  }

  check(urls: string[]): Promise<LinkResult[]> {
    const deadline = performance.now() + this.options.budgetMs;
    return mapLimited(urls, this.options.concurrency, async (url) => {
      if (performance.now() < deadline) return this.one(url);
      return this.cache.get(url) ?? { url, status: 0, redirects: [], finalUrl: url, error: `not checked: the check's ${this.options.budgetMs / 1000} s for links ran out`, unchecked: true };
    });
  }

  private async one(url: string): Promise<LinkResult> {
    const cached = this.cache.get(url);
    if (cached) return cached;
    const result = await this.follow(url);
    this.cache.set(url, result);
    return result;
  }

  private async follow(url: string): Promise<LinkResult> {
    const { timeoutMs, maxRedirects } = this.options;
    const signal = AbortSignal.timeout(timeoutMs);
    const redirects: LinkRedirect[] = [];
    let current = url;
    let status = 0;
    const result = (extra: Partial<LinkResult> = {}): LinkResult => ({ url, status, redirects, finalUrl: current, ...extra });
    try {
      for (;;) {
        let target: URL;
        try {
          target = new URL(current);
        } catch {
          return result({ error: "not a valid URL" });
        }
        if (target.protocol !== "http:" && target.protocol !== "https:") return result({ error: `redirects to a ${target.protocol} URL, which is not checked` });
        const host = hostOf(current);
        // node:net does not look a literal address up: judge it here, before any request.
        const why = net.isIP(host) ? this.policy.refusalOf(host) : undefined;
        if (why) return result({ refused: true, error: `refused: ${why}` });
        let answer = await this.request(target, "HEAD", signal);
        if (answer.status >= 400) answer = await this.request(target, "GET", signal);
        status = answer.status;
        if (status >= 300 && status < 400 && answer.location) {
          const next = new URL(answer.location, target).href;
          redirects.push({ status, location: next });
          if (redirects.length > maxRedirects) return result({ error: `more than ${maxRedirects} redirects` });
          current = next;
          continue;
        }
        return result();
      }
    } catch (err) {
      if (err instanceof TargetRefusedError) return result({ refused: true, error: `refused: ${err.message}` });
      return result({ error: describe(err, timeoutMs, signal.aborted) });
    }
  }

  /** One request: the status and Location; the body is dropped unread. */
  private request(target: URL, method: "HEAD" | "GET", signal: AbortSignal): Promise<{ status: number; location?: string }> {
    const secure = target.protocol === "https:";
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(
        target,
        {
          method,
          headers: { "user-agent": USER_AGENT, accept: "text/html,*/*;q=0.8" },
          agent: secure ? this.agents.https : this.agents.http,
          lookup: this.policy.connectLookup,
          signal,
        },
        (res) => {
          resolve({ status: res.statusCode ?? 0, location: res.headers.location });
          res.destroy();
        },
      );
      req.on("error", reject);
      req.end();
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

/** `fn` over `items` with at most `limit` running at once; results in the items' order. */
export async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function describe(err: unknown, timeoutMs: number, timedOut: boolean): string {
  const e = err as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string } };
  if (timedOut || e?.name === "TimeoutError" || e?.name === "AbortError") return `timed out after ${timeoutMs} ms`;
  const cause = e?.code ?? e?.cause?.code ?? e?.cause?.message;
  return cause ? `connection failed: ${cause}` : `request failed: ${e?.message ?? String(err)}`;
}
