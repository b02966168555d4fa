/**
 * The one publisher of WebhookEvents (DESIGN §9.2): the webhook events no MailEvent carries
 * (EMAIL_SENT at acceptance, BROADCAST_STARTED / BROADCAST_COMPLETED), on
 * `webhook.events.<TYPE>` with msgID = event id. A producer publishes only after the write
 * the event reports committed, and derives the id from the entity and the event
 * (`<broadcastId>.started`), so publishing again after a retry is deduplicated.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JetStreamClient } from "@nats-io/jetstream";
import { publishTraced } from "@mailroom/kit/jetstream/publish.js";
import { webhookEventSubject } from "./subjects.js";
import { WebhookEventSchema } from "@mailroom/proto/events/v1/events_pb.js";

/** A webhook event in wire-free terms: `data` is the webhook body's `data`. */
export interface WebhookEventSpec {
  eventId: string;
  type: string;
  workspaceId: string;
  occurredAt: Date;
  data: Record<string, unknown>;
}

export class WebhookEventPublisher {
  constructor(private readonly js: JetStreamClient) {}

  /** Resolves once the stream stored the event (or found it already stored). */
  async publish(spec: WebhookEventSpec): Promise<void> {
    if (!spec.eventId || !spec.type || !spec.workspaceId) throw new Error("a webhook event needs an id, a type and a workspace");
    const event = create(WebhookEventSchema, {
      eventId: spec.eventId,
      type: spec.type,
      workspaceId: spec.workspaceId,
      occurredAt: timestampFromDate(spec.occurredAt),
      dataJson: new TextEncoder().encode(JSON.stringify(spec.data)),
    });
    await publishTraced(this.js, webhookEventSubject(spec.type), toBinary(WebhookEventSchema, event), { msgID: spec.eventId });
  }
}
