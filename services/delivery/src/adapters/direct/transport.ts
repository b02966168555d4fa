import net from "node:net";
import type { Logger } from "@mailroom/kit/logger.js";
import { SmtpFailure, type MailTransport, type OutgoingMail, type SendResult } from "../../domain/ports.js";
import type { MessageBytes } from "../message-bytes.js";
import type { SmtpClientOptions } from "../smtp-client.js";
import { ConnectionBudget, PoolWaitTimeout, SmtpPool, type PoolReply } from "../smtp-pool.js";
import type { MxTarget } from "./mx.js";
import { smtpAttempt } from "../smtp-span.js";
import { policyAllows, type StsPolicySource } from "./policy.js";
import { DomainRate } from "./rate.js";
import { limitsFor, type DirectSettings, type DomainLimits } from "./settings.js";

/** How a connection to an MX host treats TLS. */
type TlsMode =
  /** STARTTLS when offered, certificate not verified (Postfix's `smtp_tls_security_level = may`). */
  | "opportunistic"
  /** No STARTTLS: after a failed TLS handshake with a host that offered it, as Postfix falls back. */
  | "plain"
  /** MTA-STS enforce: STARTTLS required, certificate verified against the MX host's name. */
  | "verified";

export interface DirectTransportDeps {
  logger: Logger;
  mx: { targets(domain: string): Promise<MxTarget[]> };
  policies: StsPolicySource;
  bytes: MessageBytes;
  timeoutMs: number;
}

/** One destination domain's shared limits: its connections across its MX hosts, its rate. */
interface Destination {
  limits: DomainLimits;
  budget: ConnectionBudget;
  rate: DomainRate;
}

/** How long an MX address that failed is tried after the others (Postfix keeps dead hosts aside similarly). */
const HOST_DOWN_MS = 60_000;
const DOWN_HOSTS_KEPT = 10_000;

/** Pools kept before empty ones are dropped. */
const POOL_SWEEP_AT = 1_000;

export const domainOf = (address: string) => address.slice(address.lastIndexOf("@") + 1).toLowerCase().replace(/\.$/, "");

/**
 * Delivers straight to the recipients' MX hosts (DESIGN §9.7). Per recipient domain: its MX
 * hosts tried in order (mx.ts), the next one taken when one refuses the connection or
 * answers 4xx/5xx before the message (greeting, EHLO, STARTTLS, MAIL FROM); a reply about the
 * recipient (RCPT TO, DATA) is the outcome — 4xx such as greylisting deferred for the
 * deliverer's back-off, 5xx final. STARTTLS is used whenever offered, unverified, unless
 * the domain's MTA-STS policy is `enforce`: then only MX hosts the policy names, over
 * verified TLS. Connections are pooled per MX address (several messages each) under the
 * domain's connection limit; a send over it waits, up to `waitMs`, then is deferred.
 *
 * The cc and bcc recipients at other domains get the message once `to`'s domain took it;
 * their 5xx refusals come back in `refused`, their other failures are logged.
 */
export class DirectTransport implements MailTransport {
  readonly capturing = false;
  readonly description = "direct";
  private readonly pools = new Map<string, SmtpPool>();
  private readonly destinations = new Map<string, Destination>();
  /** MX addresses that failed lately, until when (epoch ms). */
  private readonly down = new Map<string, number>();
  private closing = false;

  constructor(
    private readonly settings: DirectSettings,
    private readonly deps: DirectTransportDeps,
  ) {}

  async send(mail: OutgoingMail): Promise<SendResult> {
    if (this.closing) throw new SmtpFailure("delivery is shutting down", 0, false, true, "direct");
    const raw = await this.deps.bytes.of(mail);
    const [first, ...rest] = groupByDomain([mail.envelope.to, ...(mail.envelope.others ?? [])]);
    let reply: PoolReply;
    try {
      reply = await this.deliver(first![0], mail.envelope.from, first![1], raw, mail.meta);
    } catch (err) {
      if (err instanceof SmtpFailure) err.route = "direct";
      throw err;
    }
    const refused = reply.refused.map((r) => ({ address: r.address, code: r.reply.code, text: r.reply.text }));
    const others = await Promise.allSettled(rest.map(([domain, rcpts]) => this.deliver(domain, mail.envelope.from, rcpts, raw, mail.meta)));
    others.forEach((outcome, i) => {
      const [domain, rcpts] = rest[i]!;
      if (outcome.status === "fulfilled") {
        for (const r of outcome.value.refused) refused.push({ address: r.address, code: r.reply.code, text: r.reply.text });
        return;
      }
      const err = outcome.reason as unknown;
      // The first recipient of the group decides its transaction, as `to` does the message's.
      if (err instanceof SmtpFailure && err.aboutRecipient && err.code >= 500) {
        for (const address of rcpts) refused.push({ address, code: err.code, text: err.message });
      } else {
        this.deps.logger.warn(
          { err: err instanceof Error ? err.message : String(err), domain, recipients: rcpts.length, deliveryId: mail.meta.deliveryId },
          "cc/bcc recipients at another domain were not delivered (not retried)",
        );
      }
    });
    const result: SendResult = { code: reply.code, response: reply.text, route: "direct" };
    return refused.length ? { ...result, refused } : result;
  }

  /** One transaction with the first MX host of `domain` that takes it. */
  private async deliver(domain: string, from: string, recipients: readonly string[], raw: Buffer, meta: OutgoingMail["meta"]): Promise<PoolReply> {
    const targets = await this.deps.mx.targets(domain);
    const policy = await this.deps.policies.policyFor(domain);
    const enforce = policy?.mode === "enforce";
    let candidates = targets;
    if (policy && policy.mode !== "none") {
      const allowed = targets.filter((t) => policyAllows(policy, t.host));
      if (enforce) candidates = allowed;
      else if (allowed.length < targets.length) this.deps.logger.info({ domain, mx: [...new Set(targets.map((t) => t.host))] }, "MTA-STS (testing): an MX host is not in the policy");
    }
    if (!candidates.length) {
      throw new SmtpFailure(`4.7.5 none of ${domain}'s MX hosts (${[...new Set(targets.map((t) => t.host))].join(", ")}) is in its MTA-STS policy (enforce)`, 0, false, true);
    }
    // Hosts that failed lately go last (still tried: they may be all there is).
    const now = Date.now();
    const firstMode: TlsMode = enforce ? "verified" : "opportunistic";
    candidates = [...candidates].sort((a, b) => Number(this.isDown(a, firstMode, now)) - Number(this.isDown(b, firstMode, now)));
    const destination = this.destination(domain);
    await destination.rate.take(domain);
    const failures: string[] = [];
    let last: SmtpFailure | undefined;
    for (const target of candidates) {
      const modes: TlsMode[] = enforce ? ["verified"] : ["opportunistic", "plain"];
      for (const mode of modes) {
        try {
          // Each MX host (and each TLS mode) tried is its own SMTP attempt span.
          const pool = this.pool(domain, destination, target, mode);
          return await smtpAttempt({ host: target.host, port: this.settings.mxPort, address: target.address }, meta, () => pool.send(from, recipients, raw));
        } catch (err) {
          if (!(err instanceof SmtpFailure) || err instanceof PoolWaitTimeout || !mayTryNextHost(err)) throw err;
          last = err;
          failures.push(`${target.host}[${target.address}]: ${err.message}`);
          // Only a failed opportunistic TLS handshake is worth the same host again, without TLS.
          if (mode !== "opportunistic" || !/^STARTTLS\b/.test(err.message)) {
            this.markDown(target, mode);
            break;
          }
          this.deps.logger.info({ domain, mx: target.host, err: err.message }, "STARTTLS failed: trying the MX host without TLS");
        }
      }
    }
    const summary = failures.length > 1 ? `every MX host of ${domain} failed: ${failures.join("; ")}` : failures[0]!;
    // Not about the recipient: the deliverer retries it with its back-off, whatever the code.
    throw new SmtpFailure(summary, last!.code, false, true);
  }

  private isDown(target: MxTarget, mode: TlsMode, now: number): boolean {
    const until = this.down.get(`${target.address}\u0000${mode}`);
    return until !== undefined && until > now;
  }

  /** A host that failed before the message is tried after the others for a while. */
  private markDown(target: MxTarget, mode: TlsMode): void {
    // Per mode: an MX without STARTTLS fails an MTA-STS domain's delivery, not another's.
    const key = `${target.address}\u0000${mode}`;
    this.down.delete(key);
    if (this.down.size >= DOWN_HOSTS_KEPT) this.down.delete(this.down.keys().next().value!);
    this.down.set(key, Date.now() + HOST_DOWN_MS);
  }

  private destination(domain: string): Destination {
    let d = this.destinations.get(domain);
    if (!d) {
      const limits = limitsFor(this.settings, domain);
      d = { limits, budget: new ConnectionBudget(limits.connections), rate: new DomainRate(limits.rate, this.settings.waitMs) };
      this.destinations.set(domain, d);
    }
    return d;
  }

  private pool(domain: string, destination: Destination, target: MxTarget, mode: TlsMode): SmtpPool {
    const key = `${domain}\u0000${target.host}\u0000${target.address}\u0000${mode}`;
    let pool = this.pools.get(key);
    if (pool) return pool;
    if (this.pools.size >= POOL_SWEEP_AT) this.sweep();
    const { ehloName, localAddress, mxPort, extraCa } = this.settings;
    const client: SmtpClientOptions = {
      host: target.address,
      port: mxPort,
      secure: false,
      timeoutMs: this.deps.timeoutMs,
      // No qualified name (settings leave it empty): the client sends the address literal.
      name: ehloName || undefined,
      localAddress,
      servername: net.isIP(target.host) ? undefined : target.host,
      tlsRejectUnauthorized: mode === "verified",
      requireTls: mode === "verified",
      ignoreTls: mode === "plain",
      ca: mode === "verified" ? extraCa : undefined,
      requireTlsBecause: `${domain}'s MTA-STS policy (enforce)`,
    };
    pool = new SmtpPool(client, {
      poolSize: destination.limits.connections,
      maxMessagesPerConnection: destination.limits.messagesPerConnection,
      acquireTimeoutMs: this.settings.waitMs,
      idleTimeoutMs: this.settings.idleMs,
      budget: destination.budget,
    });
    this.pools.set(key, pool);
    return pool;
  }

  /** Drops pools with nothing open or waiting, and destinations with no pool left. */
  private sweep(): void {
    for (const [key, pool] of this.pools) {
      if (!pool.unused) continue;
      this.pools.delete(key);
      void pool.close();
    }
    const inUse = new Set([...this.pools.keys()].map((k) => k.slice(0, k.indexOf("\u0000"))));
    for (const domain of this.destinations.keys()) if (!inUse.has(domain)) this.destinations.delete(domain);
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}

/** Before the message, and not about the recipient: the host, not the mail, was the problem. */
function mayTryNextHost(err: SmtpFailure): boolean {
  return err.beforeData && !err.aboutRecipient;
}

/** Recipients by domain, `to`'s domain first and `to` first in it; duplicates dropped. */
export function groupByDomain(recipients: readonly string[]): Array<[string, string[]]> {
  const groups = new Map<string, string[]>();
  const seen = new Set<string>();
  for (const address of recipients) {
    const lower = address.toLowerCase();
    if (seen.has(lower)) continue;
    seen.add(lower);
    const domain = domainOf(address);
    const group = groups.get(domain);
    if (group) group.push(address);
    else groups.set(domain, [address]);
  }
  return [...groups];
}
