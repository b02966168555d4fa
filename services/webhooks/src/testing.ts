/**
 * Test helpers: the webhook domain with in-memory adapters — the real store adapters over
 * the embedded engine in memory, a manual clock, counting ids and a scripted sender.
 */
import { openMemoryStore } from "@mailroom/store/open.js";
import type { SendResult } from "./domain/model.js";
import type { Ids, WebhookSender } from "./domain/ports.js";
import { Outbox, type OutboxSettings } from "./domain/outbox.js";
import { Webhooks } from "./domain/webhooks.js";
import { openStores } from "./adapters/store.js";
import { NetworkPolicy, type Lookup } from "./adapters/network-policy.js";
import { silentLogger, ManualClock } from "@mailroom/kit/testing.js";
export { silentLogger, ManualClock };

/** Seal the stored signing tokens in tests as MAILROOM_SECRET does in production. */
export const TEST_SECRET_KEYS = { current: "webhooks-test-secret-0123456789" };



export function countingIds(): Ids {
  let n = 0;
  const next = () => String(++n).padStart(6, "0");
  return {
    webhookId: () => `wh_${next()}`,
    deliveryId: () => `whd_${next()}`,
    eventId: () => `evt_${next()}`,
    token: () => `whsec_${Buffer.alloc(32, n++).toString("base64")}`,
  };
}

export interface SentRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** Answers with a scripted status per URL (default 200) and records every request. */
export class ScriptedSender implements WebhookSender {
  sent: SentRequest[] = [];
  answers = new Map<string, number[]>();
  async post(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    this.sent.push({ url, headers, body });
    const queue = this.answers.get(url);
    const status = queue && queue.length > 0 ? queue.length > 1 ? queue.shift()! : queue[0] : 200;
    return status === 0 ? { statusCode: 0, durationMs: 1, error: "connection failed: ECONNREFUSED" } : { statusCode: status, durationMs: 1 };
  }
}

export const testSettings: OutboxSettings = {
  timeoutMs: 1_000,
  retryBaseMs: 5_000,
  maxPerEndpoint: 4,
  concurrency: 16,
  pollMs: 1_000_000,
  pause: { afterMs: 24 * 3600_000, minFailures: 10 },
};

/**
 * Names resolved from a table instead of DNS (a name not in it does not resolve), so unit
 * tests never query the network.
 */
export function tableLookup(table: Record<string, string[]>): Lookup {
  return async (hostname) => {
    const addresses = table[hostname.toLowerCase()];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
}

/**
 * The domain with in-memory adapters; drive the outbox with `outbox.drain()` and the clock.
 * Webhook URLs are checked by a policy that trusts loopback and resolves names from `dns`.
 */
export async function buildTestDomain(settings: Partial<OutboxSettings> = {}, network: { allow?: string[]; dns?: Record<string, string[]> } = {}) {
  const store = openMemoryStore();
  const { webhooks: webhookStore, deliveries } = await openStores(store, TEST_SECRET_KEYS);
  const clock = new ManualClock();
  const ids = countingIds();
  const sender = new ScriptedSender();
  const outbox = new Outbox({
    deliveries,
    webhooks: webhookStore,
    sender,
    clock,
    logger: silentLogger,
    owner: "test",
    settings: { ...testSettings, ...settings },
    random: () => 0.5, // no jitter
  });
  const targets = new NetworkPolicy(network.allow ?? ["127.0.0.0/8", "::1/128"], tableLookup(network.dns ?? {}));
  const webhooks = new Webhooks({ webhooks: webhookStore, deliveries, clock, ids, logger: silentLogger, targets, wake: () => undefined });
  /** Runs the outbox until nothing due is left (attempts settle before it returns). */
  outbox.start(); // polls every 1 000 s: tests drive it with runOutbox()
  const runOutbox = async () => {
    for (let i = 0; i < 100; i++) {
      await outbox.drain();
      if (outbox.busy === 0) break;
      await outbox.idle();
    }
  };
  return { store, webhookStore, deliveries, clock, ids, sender, outbox, webhooks, runOutbox };
}
