import { mailEventOf, type MailEventPublisher } from "@mailroom/pipeline/mail-events.js";
import { outcomeEventId } from "../domain/outcome.js";
import type { EventPublisher, OutcomeEvent } from "../domain/ports.js";

/**
 * Outcomes as MailEvents through the pipeline's one publisher and builder (DESIGN §9.1), with
 * the derived event id as msgID, so a republished outcome is deduplicated.
 */
export class OutcomeEventPublisher implements EventPublisher {
  constructor(private readonly publisher: Pick<MailEventPublisher, "publish">) {}

  publish(e: OutcomeEvent): Promise<void> {
    return this.publisher.publish(mailEventOf({ ...e, eventId: outcomeEventId(e.deliveryId, e.type, e.attempt), occurredAt: new Date() }));
  }
}
