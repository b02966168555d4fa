import type { JetStreamClient } from "@nats-io/jetstream";
import { MailEventPublisher, mailEventOf } from "@mailroom/pipeline/mail-events.js";
import type { InboundEvent } from "../domain/model.js";
import type { MailEvents } from "../domain/ports.js";

/**
 * Inbound's events (bounces, complaints, unsubscribes, provider-confirmed deliveries, replies) as MailEvents, through the pipeline's
 * one MailEvent builder and publisher (subject mail.events.<source>.<type>, msgID = event id).
 */
export class JetStreamMailEvents implements MailEvents {
  private readonly publisher: MailEventPublisher;

  constructor(js: JetStreamClient) {
    this.publisher = new MailEventPublisher(js);
  }

  async publish(e: InboundEvent): Promise<void> {
    await this.publisher.publish(mailEventOf(e));
  }
}
