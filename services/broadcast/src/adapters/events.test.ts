import { describe, expect, it } from "vitest";
import { broadcastJson, broadcastSchema } from "@mailroom/http/broadcasts-schema.js";
import { publicBroadcastJson } from "@mailroom/api-json/broadcast.js";
import type { Broadcast } from "../domain/model.js";
import { protoBroadcast } from "../routes.js";
import { broadcastEventOf, PublishedBroadcastEvents } from "./events.js";
import type { WebhookEventSpec } from "@mailroom/pipeline/webhook-events.js";

const at = (s: string) => new Date(`2030-01-15T${s}Z`);

function broadcast(over: Partial<Broadcast> = {}): Broadcast {
  return {
    id: "cmp_1",
    workspaceId: "ws_1",
    name: "Spring",
    status: "COMPLETED",
    subject: "Hi {{firstName}}",
    previewText: "News",
    fromEmail: "news@acme.test",
    fromName: "Acme",
    replyTo: ["help@acme.test"],
    html: "<p>Hi</p>",
    text: "Hi",
    settings: { trackOpens: true, trackClicks: false },
    allowUnknownVariables: false,
    deliveryMethod: "ASAP",
    scheduledAt: at("12:00:00"),
    sentAt: at("12:00:01"),
    completedAt: at("12:05:00"),
    createdAt: at("11:00:00"),
    updatedAt: at("12:05:00"),
    progress: { recipients: 3, released: 3, sent: 3, delivered: 3, deferred: 1, bounced: 0, failed: 0, suppressed: 0, opened: 2, clicked: 1, unsubscribed: 0, finalized: 3 },
    ...over,
  } as Broadcast;
}

describe("broadcast webhook events", () => {
  it("carry the broadcast exactly as GET /v1/broadcasts/:id answers it", () => {
    for (const b of [broadcast(), broadcast({ status: "IN_PROGRESS", completedAt: undefined, deliveryMethod: undefined })]) {
      const json = broadcastEventOf("BROADCAST_COMPLETED", b, at("13:00:00")).data.broadcast;
      expect(json).toEqual(broadcastJson(protoBroadcast(b)));
      // The gateway's strict schema of the public broadcast takes it whole (no field more or less).
      expect(broadcastSchema.parse(json)).toEqual(json);
      expect(publicBroadcastJson(protoBroadcast(b))).toEqual(json);
    }
  });

  it("BROADCAST_COMPLETED of an A/B test carries each variant's counts and rates, and the winner", () => {
    const b = broadcast({
      abTest: {
        variants: [{ subject: "A" }, { fromName: "Bee" }],
        testShare: 0.2, metric: "opens", waitForSeconds: 3600, state: "decided", seed: "s",
        waitUntil: at("12:03:00"), testReleased: 2, winner: 1, winnerChosenBy: "metric", winnerChosenAt: at("12:03:00"),
        stats: { v0: { recipients: 1, delivered: 1, uniqueOpens: 0, uniqueClicks: 0 }, v1: { recipients: 1, delivered: 1, uniqueOpens: 1, uniqueClicks: 1 } },
      },
    });
    const json = broadcastEventOf("BROADCAST_COMPLETED", b, at("13:00:00")).data.broadcast;
    expect(broadcastSchema.parse(json)).toEqual(json);
    expect(broadcastSchema.parse(json).abTest).toEqual({
      variants: [
        { subject: "A", recipients: 1, delivered: 1, uniqueOpens: 0, uniqueClicks: 0, openRate: 0, clickRate: 0 },
        { fromName: "Bee", recipients: 1, delivered: 1, uniqueOpens: 1, uniqueClicks: 1, openRate: 1, clickRate: 1 },
      ],
      testShare: 0.2, metric: "opens", waitFor: 3600, state: "decided", waitUntil: "2030-01-15T12:03:00.000Z",
      winner: 1, winnerChosenBy: "metric", winnerChosenAt: "2030-01-15T12:03:00.000Z",
    });
  });

  it("have ids derived from the broadcast and the event, and the time of the status change", async () => {
    const published: WebhookEventSpec[] = [];
    const events = new PublishedBroadcastEvents({ publish: async (s) => void published.push(s) }, () => at("13:00:00"));
    await events.started(broadcast({ status: "IN_PROGRESS", completedAt: undefined }));
    await events.completed(broadcast());
    expect(published.map((e) => [e.eventId, e.type, e.workspaceId, e.occurredAt.toISOString()])).toEqual([
      ["cmp_1.started", "BROADCAST_STARTED", "ws_1", "2030-01-15T12:00:01.000Z"],
      ["cmp_1.completed", "BROADCAST_COMPLETED", "ws_1", "2030-01-15T12:05:00.000Z"],
    ]);
    expect(published[1].data).toEqual({ broadcast: expect.objectContaining({ id: "cmp_1", status: "COMPLETED", progress: expect.objectContaining({ recipients: 3, delivered: 3 }) }) });
    expect(broadcastEventOf("BROADCAST_STARTED", broadcast({ sentAt: undefined }), at("13:00:00")).occurredAt).toEqual(at("13:00:00"));
  });
});
