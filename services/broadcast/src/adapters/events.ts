/**
 * BROADCAST_STARTED / BROADCAST_COMPLETED as WebhookEvents (DESIGN §9.2): `data` is
 * `{ broadcast }` in the shape GET /v1/broadcasts/:id answers (counters included), the id
 * `<broadcastId>.started` / `<broadcastId>.completed`, so a repeated publish is deduplicated.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { WebhookEventSpec } from "@mailroom/pipeline/webhook-events.js";
import { BroadcastStatus, DeliveryMethod, type Broadcast as PbBroadcast } from "../../../../gen/mailroom/broadcast/v1/broadcast_pb.js";
import type { Broadcast } from "../domain/model.js";
import type { BroadcastEvents } from "../domain/ports.js";
import { protoBroadcast } from "../routes.js";

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : null);
const n = (v: bigint | undefined) => Number(v ?? 0n);

/**
 * Proto broadcast -> the public JSON of the gateway's broadcastJson (gateway/src/routes/
 * broadcasts-schema.ts; a unit may not import the gateway, and a test keeps the two equal).
 */
export function publicBroadcastJson(b: PbBroadcast): Record<string, unknown> {
  const p = b.progress;
  return {
    id: b.id,
    name: b.name,
    status: BroadcastStatus[b.status],
    subject: b.subject,
    previewText: b.previewText,
    fromEmail: b.fromEmail,
    fromName: b.fromName,
    replyTo: b.replyTo,
    html: b.html,
    text: b.text,
    audience: { all: b.audience?.all ?? true },
    settings: { trackOpens: b.settings?.trackOpens ?? true, trackClicks: b.settings?.trackClicks ?? true },
    allowUnknownVariables: b.allowUnknownVariables,
    deliveryMethod: b.deliveryMethod ? DeliveryMethod[b.deliveryMethod] : null,
    scheduledAt: iso(b.scheduledAt),
    sentAt: iso(b.sentAt),
    completedAt: iso(b.completedAt),
    createdAt: iso(b.createdAt) ?? new Date(0).toISOString(),
    updatedAt: iso(b.updatedAt) ?? iso(b.createdAt) ?? new Date(0).toISOString(),
    pauseReason: b.pauseReason || null,
    progress: {
      recipients: n(p?.recipients),
      released: n(p?.released),
      sent: n(p?.sent),
      delivered: n(p?.delivered),
      deferred: n(p?.deferred),
      bounced: n(p?.bounced),
      failed: n(p?.failed),
      suppressed: n(p?.suppressed),
      opened: n(p?.opened),
      clicked: n(p?.clicked),
      unsubscribed: n(p?.unsubscribed),
    },
  };
}

export function broadcastEventOf(type: "BROADCAST_STARTED" | "BROADCAST_COMPLETED", broadcast: Broadcast, now: Date): WebhookEventSpec {
  const started = type === "BROADCAST_STARTED";
  return {
    eventId: `${broadcast.id}.${started ? "started" : "completed"}`,
    type,
    workspaceId: broadcast.workspaceId,
    occurredAt: (started ? broadcast.sentAt : broadcast.completedAt) ?? now,
    data: { broadcast: publicBroadcastJson(protoBroadcast(broadcast)) },
  };
}

export class PublishedBroadcastEvents implements BroadcastEvents {
  constructor(
    private readonly publisher: { publish(spec: WebhookEventSpec): Promise<void> },
    private readonly now: () => Date = () => new Date(),
  ) {}

  started(broadcast: Broadcast): Promise<void> {
    return this.publisher.publish(broadcastEventOf("BROADCAST_STARTED", broadcast, this.now()));
  }

  completed(broadcast: Broadcast): Promise<void> {
    return this.publisher.publish(broadcastEventOf("BROADCAST_COMPLETED", broadcast, this.now()));
  }
}
