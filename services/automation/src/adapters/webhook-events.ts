import type { WebhookEventPublisher } from "@mailroom/pipeline/webhook-events.js";
import { publicRun, runJson, type RunEventPublisher, type StoredRun } from "../domain/runs.js";

const TYPE = { started: "AUTOMATION_RUN_STARTED", completed: "AUTOMATION_RUN_COMPLETED", exited: "AUTOMATION_RUN_EXITED" } as const;

/**
 * Run webhooks on WEBHOOK_EVENTS (DESIGN §9.2): event id `<runId>.started|completed|exited`,
 * so publishing again (a redelivered trigger, the sweep of unannounced ends) is one event.
 */
export class RunWebhookEvents implements RunEventPublisher {
  constructor(private readonly publisher: Pick<WebhookEventPublisher, "publish">) {}

  publish(kind: "started" | "completed" | "exited", run: StoredRun, at: Date): Promise<void> {
    return this.publisher.publish({
      eventId: `${run.id}.${kind}`,
      type: TYPE[kind],
      workspaceId: run.workspaceId,
      occurredAt: at,
      data: { run: runJson(publicRun(run)), automation: { id: run.automationId, name: run.automationName, version: run.version } },
    });
  }
}
