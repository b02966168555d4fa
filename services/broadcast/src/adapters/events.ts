/**
 * BROADCAST_STARTED / BROADCAST_COMPLETED as WebhookEvents (DESIGN §9.2): `data` is
 * `{ broadcast }` in the shape GET /v1/broadcasts/:id answers (counters included), the id
 * `<broadcastId>.started` / `<broadcastId>.completed`, so a repeated publish is deduplicated.
 */
import { publicBroadcastJson } from "@mailroom/api-json/broadcast.js";
import type { WebhookEventSpec } from "@mailroom/pipeline/webhook-events.js";
import type { Broadcast } from "../domain/model.js";
import type { BroadcastEvents } from "../domain/ports.js";
import { protoBroadcast } from "../routes.js";

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
