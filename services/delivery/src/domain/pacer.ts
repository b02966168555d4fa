import { createHash } from "node:crypto";
import type { PacingRepository } from "./ports.js";

/** Shared buckets are per relay host, never keyed by credentials. */
export function relayKeyOf(smtpUrl: string | undefined): string {
  if (!smtpUrl) return "capture";
  let hostPort = smtpUrl;
  try {
    const u = new URL(smtpUrl);
    hostPort = `${u.hostname}:${u.port}`;
  } catch {
    // keep the raw string; only its hash is used
  }
  return createHash("sha256").update(hostPort).digest("hex").slice(0, 16);
}

/** Tokens a process takes from a shared bucket at once: ~100 ms worth, so KV is not hit per message. */
export function leaseSize(rate: number): number {
  return Math.max(1, Math.min(100, Math.floor(rate / 10)));
}

/** Unused leased tokens are dropped after this, so a process can't hoard a bucket. */
const LEASE_TTL_MS = 250;

/** Leases kept before expired ones are swept (one per rate-limited workspace, plus the relay's). */
const MAX_LEASES = 1_000;

interface Lease {
  tokens: number;
  expiresAt: number;
}

/**
 * Rate limits and pauses that hold across every delivery process. The buckets live in
 * the shared PacingRepository (JetStream KV); this class only leases small batches of
 * tokens so that the shared bucket sees one compare-and-set per batch, not per message.
 */
export class Pacer {
  private readonly leases = new Map<string, Lease>();
  private readonly refills = new Map<string, Promise<number>>();

  constructor(
    private readonly repo: PacingRepository,
    private readonly relay: { key: string; rate: number },
    private readonly now: () => number = Date.now,
  ) {}

  isPaused(broadcastId: string): boolean {
    return broadcastId !== "" && this.repo.isPaused(broadcastId);
  }

  get relayRate(): number {
    return this.relay.rate;
  }

  /** 0 when the message may go now, else how long to wait before asking again. */
  async acquire(workspaceId: string): Promise<number> {
    const wsRate = this.repo.workspaceRate(workspaceId);
    const wsKey = `ws.${workspaceId}`;
    if (wsRate > 0) {
      const wait = await this.take(wsKey, wsRate);
      if (wait > 0) return wait;
    }
    if (this.relay.rate > 0) {
      const wait = await this.take(`relay.${this.relay.key}`, this.relay.rate);
      if (wait > 0) {
        if (wsRate > 0) this.giveBack(wsKey); // not sent: the workspace token stays ours
        return wait;
      }
    }
    return 0;
  }

  private async take(key: string, rate: number): Promise<number> {
    for (;;) {
      if (this.useLease(key)) return 0;
      const pending = this.refills.get(key);
      if (pending) {
        const wait = await pending;
        if (wait > 0) return wait;
        continue; // the refill landed tokens; compete for them
      }
      const refill = this.refill(key, rate).finally(() => this.refills.delete(key));
      this.refills.set(key, refill);
      const wait = await refill;
      if (wait > 0) return wait;
    }
  }

  private useLease(key: string): boolean {
    const lease = this.leases.get(key);
    if (!lease || lease.tokens <= 0 || lease.expiresAt < this.now()) return false;
    lease.tokens -= 1;
    return true;
  }

  /** A lease per rate-limited workspace: past MAX_LEASES, expired ones (worth nothing) go. */
  private dropExpiredLeases(): void {
    const now = this.now();
    for (const [key, lease] of this.leases) if (lease.expiresAt < now) this.leases.delete(key);
  }

  /** Leases held (tests). */
  get leaseCount(): number {
    return this.leases.size;
  }

  private giveBack(key: string): void {
    const lease = this.leases.get(key);
    if (lease && lease.expiresAt >= this.now()) lease.tokens += 1;
  }

  private async refill(key: string, rate: number): Promise<number> {
    const grant = await this.repo.takeTokens(key, rate, Math.max(1, rate), leaseSize(rate));
    if (grant.granted > 0) {
      if (this.leases.size >= MAX_LEASES) this.dropExpiredLeases();
      this.leases.set(key, { tokens: grant.granted, expiresAt: this.now() + LEASE_TTL_MS });
      return 0;
    }
    return Math.max(1, grant.waitMs);
  }
}
