/**
 * Test helpers for receiving (DESIGN §10.4): the config and receiver use cases over the real
 * store adapter on the in-memory store, an object store in a Map, and recording ports.
 */
import { openMemoryStore } from "@mailroom/store/open.js";
import { StoreReceiving } from "./adapters/receiving-store.js";
import { InboundConfig } from "./domain/receiving/config.js";
import { Receiver } from "./domain/receiving/receiver.js";
import { InboundRouting } from "./domain/receiving/routing.js";
import { InboundMail } from "./domain/inbound.js";
import type { DmarcReports, Forwarder, MxLookup, ReceivedContents, SpamScorer, WebhookEvents } from "./domain/ports.js";
import { MemorySentDeliveries, RecordingEvents, RecordingSuppressions, silentLogger, TEST_SECRET, BOUNCE_DOMAIN } from "./testing.js";

export const MX_HOST = "mx.mailroom.test";

export class MemoryContents implements ReceivedContents {
  readonly objects = new Map<string, Uint8Array>();
  async put(name: string, data: Uint8Array) {
    this.objects.set(name, new Uint8Array(data));
  }
  async get(name: string) {
    const data = this.objects.get(name);
    if (!data) return null;
    return (async function* () {
      // Chunks, as the object store answers.
      for (let i = 0; i < data.byteLength; i += 1000) yield data.subarray(i, i + 1000);
    })();
  }
}

/** MX answers by domain; a domain mapped to an Error fails its lookup. */
export class MapMxLookup implements MxLookup {
  readonly zone = new Map<string, string[] | Error>();
  async mx(domain: string) {
    const answer = this.zone.get(domain);
    if (answer instanceof Error) throw answer;
    return answer ?? [];
  }
}

export class RecordingWebhooks implements WebhookEvents {
  readonly events: { eventId: string; type: string; workspaceId: string; occurredAt: Date; data: Record<string, unknown> }[] = [];
  async publish(spec: (typeof this.events)[number]) {
    this.events.push(spec);
  }
}

export class RecordingForwarder implements Forwarder {
  readonly forwards: { workspaceId: string; receivedId: string; to: string; mailFrom: string; raw: Uint8Array }[] = [];
  failWith?: Error;
  async forward(input: (typeof this.forwards)[number]) {
    if (this.failWith) throw this.failWith;
    this.forwards.push(input);
    return { emailId: `trs_forward_${this.forwards.length}` };
  }
}

export class RecordingDmarc implements DmarcReports {
  readonly received: Uint8Array[] = [];
  isReportMailbox(address: string) {
    return address.toLowerCase() === `dmarc@${MX_HOST}`;
  }
  async receive(raw: Uint8Array) {
    this.received.push(raw);
  }
}

/** Sending domains verified per workspace ("ws:domain"); a parent covers its subdomains, as the accounts unit's adapter (adapters/sending-domains.ts) does. */
export class MapSendingDomains {
  readonly verified = new Set<string>();
  allow(workspaceId: string, domain: string): void {
    this.verified.add(`${workspaceId}:${domain}`);
  }
  async verifiedFor(workspaceId: string, domain: string): Promise<boolean> {
    const labels = domain.split(".");
    for (let i = 0; i <= labels.length - 2; i++) if (this.verified.has(`${workspaceId}:${labels.slice(i).join(".")}`)) return true;
    return false;
  }
}

export async function testReceiving(opts: { spam?: SpamScorer; now?: () => Date } = {}) {
  const store = openMemoryStore();
  const receiving = await StoreReceiving.open(store, 30 * 86_400_000);
  const routing = new InboundRouting(receiving.domains, receiving.rules, silentLogger);
  await routing.start();
  const mx = new MapMxLookup();
  const sendingDomains = new MapSendingDomains();
  let tick = 0;
  const clock = { now: opts.now ?? (() => new Date(Date.UTC(2026, 10, 29, 12, 0, tick++))) };
  const config = new InboundConfig({
    domains: receiving.domains, rules: receiving.rules, routing, mx, sendingDomains, clock, logger: silentLogger,
    mxHost: MX_HOST, mxPriority: 10, reserved: [MX_HOST, BOUNCE_DOMAIN],
  });
  const contents = new MemoryContents();
  const sent = new MemorySentDeliveries();
  const events = new RecordingEvents();
  const webhooks = new RecordingWebhooks();
  const forwarder = new RecordingForwarder();
  const dmarc = new RecordingDmarc();
  const receiver = new Receiver({
    routing, received: receiving.received, contents, sent, events, webhooks, forwarder, dmarc, spam: opts.spam, clock, logger: silentLogger,
  });
  const inbound = new InboundMail({
    sent, suppressions: new RecordingSuppressions(), events, clock, logger: silentLogger,
    policy: { secret: TEST_SECRET, domains: [BOUNCE_DOMAIN] }, receiver,
  });
  /** A verified domain of the workspace with the given rules. */
  async function verifiedDomain(workspaceId: string, domain: string, rules: { match: string; action: string; forwardTo?: string }[]) {
    mx.zone.set(domain, [MX_HOST]);
    sendingDomains.allow(workspaceId, domain);
    const d = await config.createDomain(workspaceId, domain);
    for (const r of rules) await config.createRule(workspaceId, d.id, { forwardTo: "", ...r });
    return d;
  }
  return { store, receiving, routing, config, mx, sendingDomains, contents, sent, events, webhooks, forwarder, dmarc, receiver, inbound, verifiedDomain };
}

/** A message with a text body and, when given, one attachment (base64). */
export function mime(opts: {
  from?: string; to?: string; cc?: string; subject?: string; messageId?: string; inReplyTo?: string; references?: string;
  text?: string; attachment?: { filename: string; contentType: string; content: Buffer };
}): string {
  const head = [
    `From: ${opts.from ?? "Ann Example <ann@example.test>"}`,
    `To: ${opts.to ?? "support@acme.test"}`,
    ...(opts.cc ? [`Cc: ${opts.cc}`] : []),
    `Subject: ${opts.subject ?? "Hello"}`,
    ...(opts.messageId !== "" ? [`Message-ID: <${opts.messageId ?? "m1@example.test"}>`] : []),
    ...(opts.inReplyTo ? [`In-Reply-To: <${opts.inReplyTo}>`] : []),
    ...(opts.references ? [`References: ${opts.references}`] : []),
    "Date: Sun, 29 Nov 2026 12:00:00 +0000",
    "MIME-Version: 1.0",
  ];
  const text = opts.text ?? "Hi there";
  if (!opts.attachment) return [...head, "Content-Type: text/plain; charset=utf-8", "", text, ""].join("\r\n");
  const b64 = opts.attachment.content.toString("base64").replace(/.{76}/g, "$&\r\n");
  return [
    ...head,
    'Content-Type: multipart/mixed; boundary="b1"',
    "",
    "--b1",
    "Content-Type: text/plain; charset=utf-8",
    "",
    text,
    "--b1",
    `Content-Type: ${opts.attachment.contentType}; name="${opts.attachment.filename}"`,
    `Content-Disposition: attachment; filename="${opts.attachment.filename}"`,
    "Content-Transfer-Encoding: base64",
    "",
    b64,
    "--b1--",
    "",
  ].join("\r\n");
}
