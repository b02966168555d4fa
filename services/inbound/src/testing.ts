/**
 * Test helpers: the inbound domain with in-memory adapters that record what they were
 * asked, and the fixture reports under ./fixtures with their placeholders filled in.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { verpAddress } from "@mailroom/content/verp.js";
import { InboundMail } from "./domain/inbound.js";
import type { InboundEvent, SentDelivery, SuppressionReason } from "./domain/model.js";
import type { MailEvents, SentDeliveries, Suppressions } from "./domain/ports.js";
import { silentLogger } from "@mailroom/kit/testing.js";
export { silentLogger };

export const TEST_SECRET = "inbound-test-secret-0123456789";
export const BOUNCE_DOMAIN = "bounces.mailroom.test";

export class MemorySentDeliveries implements SentDeliveries {
  readonly byId = new Map<string, SentDelivery>();
  async remember(d: SentDelivery) {
    this.byId.set(d.deliveryId, d);
  }
  async find(id: string) {
    return this.byId.get(id) ?? null;
  }
  async findByMessageId(messageId: string) {
    return [...this.byId.values()].find((d) => d.messageId === messageId) ?? null;
  }
}

export class RecordingSuppressions implements Suppressions {
  readonly suppressed: { workspaceId: string; email: string; reason: SuppressionReason; detail: string }[] = [];
  readonly unsubscribedContacts: { workspaceId: string; email: string }[] = [];
  async suppress(workspaceId: string, email: string, reason: SuppressionReason, detail: string) {
    this.suppressed.push({ workspaceId, email, reason, detail });
  }
  async markUnsubscribed(workspaceId: string, email: string) {
    this.unsubscribedContacts.push({ workspaceId, email });
  }
}

export class RecordingEvents implements MailEvents {
  readonly events: InboundEvent[] = [];
  async publish(e: InboundEvent) {
    this.events.push(e);
  }
}

export function sentDelivery(overrides: Partial<SentDelivery> = {}): SentDelivery {
  return {
    deliveryId: "trs_01jd5m3v8k2x9q7w4e6r1t0y3u",
    workspaceId: "ws_acme",
    source: "transactional",
    emailId: "trs_01jd5m3v8k2x9q7w4e6r1t0y3u",
    broadcastId: "",
    messageId: "01jd5m3v8k2x9q7w4e6r1t0y3u@acme.test",
    recipient: "ann@example.test",
    contactId: "",
    groupBy: "receipts",
    sentAt: new Date("2026-11-20T10:15:01Z"),
    ...overrides,
  };
}

export function testInbound(opts: { domains?: string[] } = {}) {
  const sent = new MemorySentDeliveries();
  const suppressions = new RecordingSuppressions();
  const events = new RecordingEvents();
  const inbound = new InboundMail({
    sent,
    suppressions,
    events,
    clock: { now: () => new Date("2026-11-22T12:00:00Z") },
    logger: silentLogger,
    policy: { secret: TEST_SECRET, domains: opts.domains ?? [BOUNCE_DOMAIN] },
  });
  return { inbound, sent, suppressions, events };
}

/**
 * A fixture report with %%VERP%% (the delivery's return path), %%DELIVERY_ID%% and
 * %%RCPT%% filled in.
 */
export function fixture(name: string, vars: { deliveryId: string; secret?: string; rcpt?: string }): string {
  const verp = verpAddress(vars.secret ?? TEST_SECRET, vars.deliveryId, BOUNCE_DOMAIN)!;
  return readFileSync(path.join(import.meta.dirname, "fixtures", name), "utf8")
    .replaceAll("%%VERP%%", verp)
    .replaceAll("%%DELIVERY_ID%%", vars.deliveryId)
    .replaceAll("%%RCPT%%", vars.rcpt ?? `fbl@${BOUNCE_DOMAIN}`);
}
