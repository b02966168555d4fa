import type { KV, KvEntry } from "@nats-io/kv";
import { openKvBucket } from "@mailroom/kit/jetstream.js";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@mailroom/kit/logger.js";
import { takeFromBucket, type BucketState } from "@mailroom/kit/token-bucket.js";
import type { PacingRepository, TokenGrant } from "../domain/ports.js";

export const PACING_BUCKET = "mailroom_delivery_pacing";

interface Mirrored<T> {
  value: T;
  revision: number;
}

/**
 * Pacing state shared by every delivery process through JetStream KV:
 *   pause.<broadcastId>   a paused broadcast (deleted on resume)
 *   rate.<workspaceId>    {"mps": n} a workspace's messages per second
 *   bucket.<key>          {"tokens", "at"} a token bucket, updated by compare-and-set on its revision
 * Pauses and rates are mirrored in memory by a KV watch so the per-message check costs
 * nothing; buckets are read and written through CAS.
 */
export class KvPacingStore implements PacingRepository {
  private readonly paused = new Map<string, Mirrored<boolean>>();
  private readonly rates = new Map<string, Mirrored<number>>();
  private stopWatch?: () => void;

  private constructor(
    private readonly kv: KV,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {}

  static async open(nc: NatsConnection, logger: Logger, now: () => number = Date.now): Promise<KvPacingStore> {
    const kv = await openKvBucket(nc, PACING_BUCKET, { history: 1 });
    const repo = new KvPacingStore(kv, logger, now);
    await repo.startMirror();
    return repo;
  }

  private async startMirror(): Promise<void> {
    // One watch per prefix (nats-server 2.9 takes one filter per watch); bucket.* churn is not watched.
    const watches = await Promise.all(["pause.>", "rate.>"].map((key) => this.kv.watch({ key })));
    this.stopWatch = () => watches.forEach((w) => w.stop());
    for (const watch of watches) {
      void (async () => {
        for await (const e of watch) this.apply(e);
      })().catch((err) => this.logger.error({ err }, "pacing watch ended"));
    }
    // The watch replays current values asynchronously; read them once now so the first
    // job already sees them. Revisions decide which of the two views is newer.
    for (const prefix of ["pause", "rate"]) {
      const keys = await this.kv.keys(`${prefix}.>`);
      for await (const k of keys) {
        const e = await this.kv.get(k);
        if (e) this.apply(e);
      }
    }
  }

  private apply(e: KvEntry): void {
    const [kind, id] = splitKey(e.key);
    const deleted = e.operation !== "PUT";
    if (kind === "pause") {
      const cur = this.paused.get(id);
      if (cur && cur.revision >= e.revision) return;
      this.paused.set(id, { value: !deleted, revision: e.revision });
    } else if (kind === "rate") {
      const cur = this.rates.get(id);
      if (cur && cur.revision >= e.revision) return;
      let mps = 0;
      if (!deleted) {
        try {
          mps = Number(e.json<{ mps: number }>().mps) || 0;
        } catch {
          mps = 0;
        }
      }
      this.rates.set(id, { value: mps, revision: e.revision });
    }
  }

  isPaused(broadcastId: string): boolean {
    return this.paused.get(broadcastId)?.value === true;
  }

  async setPaused(broadcastId: string, paused: boolean): Promise<void> {
    const key = `pause.${broadcastId}`;
    if (paused) {
      const revision = await this.kv.put(key, JSON.stringify({ since: new Date(this.now()).toISOString() }));
      this.apply(fakeEntry(key, revision, "PUT", "{}"));
    } else {
      await this.kv.delete(key);
      const e = await this.kv.get(key);
      if (e) this.apply(e);
    }
  }

  workspaceRate(workspaceId: string): number {
    return this.rates.get(workspaceId)?.value ?? 0;
  }

  async setWorkspaceRate(workspaceId: string, messagesPerSecond: number): Promise<void> {
    const key = `rate.${workspaceId}`;
    if (messagesPerSecond > 0) {
      const body = JSON.stringify({ mps: messagesPerSecond });
      const revision = await this.kv.put(key, body);
      this.apply(fakeEntry(key, revision, "PUT", body));
    } else {
      await this.kv.delete(key);
      const e = await this.kv.get(key);
      if (e) this.apply(e);
    }
  }

  pausedBroadcasts(): string[] {
    return [...this.paused].filter(([, m]) => m.value).map(([id]) => id).sort();
  }

  workspaceRates(): Array<{ workspaceId: string; messagesPerSecond: number }> {
    return [...this.rates]
      .filter(([, m]) => m.value > 0)
      .map(([workspaceId, m]) => ({ workspaceId, messagesPerSecond: m.value }))
      .sort((a, b) => a.workspaceId.localeCompare(b.workspaceId));
  }

  async takeTokens(key: string, rate: number, burst: number, want: number): Promise<TokenGrant> {
    const kvKey = `bucket.${key}`;
    for (let i = 0; i < 20; i++) {
      const entry = await this.kv.get(kvKey);
      const prev = entry && entry.operation === "PUT" ? parseBucket(entry) : undefined;
      const take = takeFromBucket(prev, rate, burst, want, this.now());
      if (take.granted === 0) return { granted: 0, waitMs: take.waitMs };
      const body = JSON.stringify(take.state);
      try {
        if (entry) await this.kv.update(kvKey, body, entry.revision);
        else await this.kv.create(kvKey, body);
        return { granted: take.granted, waitMs: 0 };
      } catch {
        // Another process took tokens between our read and write: read again.
        await new Promise((r) => setTimeout(r, Math.random() * 5 * (i + 1)));
      }
    }
    return { granted: 0, waitMs: 50 };
  }

  async close(): Promise<void> {
    this.stopWatch?.();
  }
}

function splitKey(key: string): [string, string] {
  const dot = key.indexOf(".");
  return [key.slice(0, dot), key.slice(dot + 1)];
}

function parseBucket(e: KvEntry): BucketState | undefined {
  try {
    const s = e.json<BucketState>();
    return Number.isFinite(s.tokens) && Number.isFinite(s.at) ? s : undefined;
  } catch {
    return undefined;
  }
}

function fakeEntry(key: string, revision: number, operation: "PUT" | "DEL", body: string): KvEntry {
  const value = new TextEncoder().encode(body);
  return {
    bucket: PACING_BUCKET, key, rawKey: key, value, revision, operation, created: new Date(), length: value.length,
    json: <T>() => JSON.parse(body) as T,
    string: () => body,
  };
}
