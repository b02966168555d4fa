import { describe, expect, it } from "vitest";
import type { DeliveryJobSpec } from "@mailroom/pipeline/work.js";
import type { WebhookEventSpec } from "@mailroom/pipeline/webhook-events.js";
import { emailSentEventId, QueueWithSentEvents } from "./queue.js";

const job = (over: Partial<DeliveryJobSpec> = {}): DeliveryJobSpec => ({
  deliveryId: "trs_1",
  emailId: "trs_1",
  workspaceId: "ws_1",
  source: "transactional",
  messageId: "m1@acme.test",
  recipient: { email: "ada@example.test" },
  fromEmail: "team@acme.test",
  contentRef: "email:trs_1",
  groupBy: "welcome",
  enqueuedAt: new Date("2030-01-15T12:00:00Z"),
  ...over,
});

function world(failJob = 0) {
  const log: string[] = [];
  const events: WebhookEventSpec[] = [];
  let failures = failJob;
  const queue = new QueueWithSentEvents(
    {
      publishJob: async (j) => {
        if (failures-- > 0) throw new Error("queue down");
        log.push(`job ${j.deliveryId}`);
      },
    },
    { publish: async (e) => void (log.push(`event ${e.type}`), events.push(e)) },
  );
  return { queue, log, events };
}

describe("the email service's queue: job, then EMAIL_SENT", () => {
  it("carries the email's tags in EMAIL_SENT's data in the client's shape, and none when it has none", async () => {
    const w = world();
    await w.queue.publishJob(job({ tags: [{ name: "kind", value: "invoice" }] }));
    await w.queue.publishJob(job({ deliveryId: "trs_2", emailId: "trs_2" }));
    expect(w.events[0]!.data.tags).toEqual([{ name: "kind", value: "invoice" }]);
    expect(w.events[1]!.data).not.toHaveProperty("tags");
  });

  it("publishes EMAIL_SENT once the job is queued, with the email's fields and an id derived from the email", async () => {
    const w = world();
    await w.queue.publishJob(job());
    await w.queue.publishJob(job({ enqueuedAt: new Date("2030-01-15T12:00:05Z") })); // a republish after a lease ran out
    expect(w.log).toEqual(["job trs_1", "event EMAIL_SENT", "job trs_1", "event EMAIL_SENT"]);
    expect(w.events[0]).toEqual({
      eventId: emailSentEventId("trs_1"),
      type: "EMAIL_SENT",
      workspaceId: "ws_1",
      occurredAt: new Date("2030-01-15T12:00:00Z"),
      data: { source: "transactional", emailId: "trs_1", messageId: "m1@acme.test", to: "ada@example.test", groupBy: "welcome" },
    });
    // The same id each time: the stream (and past its window the webhooks unit) keeps one.
    expect(w.events[1].eventId).toBe(w.events[0].eventId);
    expect(emailSentEventId("trs_2")).not.toBe(emailSentEventId("trs_1"));
  });

  it("publishes no event when the job was not queued (the caller retries both)", async () => {
    const w = world(1);
    await expect(w.queue.publishJob(job())).rejects.toThrow("queue down");
    expect(w.events).toEqual([]);
  });

  it("publishes no EMAIL_SENT for other sources' jobs", async () => {
    const w = world();
    await w.queue.publishJob(job({ source: "test" as DeliveryJobSpec["source"] }));
    expect(w.events).toEqual([]);
  });
});
