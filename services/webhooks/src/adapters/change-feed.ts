import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@mailroom/kit/logger.js";

/** Core NATS subject (no stream): a webhook of a workspace changed somewhere. */
export const CHANGES_SUBJECT = "mailroom.webhooks.changed";

export interface WebhookChange {
  workspaceId?: string;
  webhookId?: string;
  /** The process that made the change (it already dropped its own cache entries). */
  origin: string;
}

/**
 * Tells every webhooks process that a webhook changed, so each drops its cached lookups
 * at once instead of within the cache's TTL (which, for the dispatcher, would mean events
 * missed by a just-created or just-resumed webhook). Best effort: a lost message is
 * covered by the TTL.
 */
export class NatsChangeFeed {
  constructor(
    private readonly nc: NatsConnection,
    private readonly origin: string,
    private readonly logger: Logger,
  ) {}

  publish(change: Omit<WebhookChange, "origin">): void {
    try {
      this.nc.publish(CHANGES_SUBJECT, JSON.stringify({ ...change, origin: this.origin }));
    } catch (err) {
      this.logger.warn({ err }, "webhook change not announced; other processes see it within the cache TTL");
    }
  }

  subscribe(onChange: (change: WebhookChange) => void): { unsubscribe(): void } {
    const sub = this.nc.subscribe(CHANGES_SUBJECT, {
      callback: (err, msg) => {
        if (err) return;
        try {
          const change = JSON.parse(new TextDecoder().decode(msg.data)) as WebhookChange;
          if (change.origin !== this.origin) onChange(change);
        } catch {
          // not ours
        }
      },
    });
    return { unsubscribe: () => sub.unsubscribe() };
  }
}
