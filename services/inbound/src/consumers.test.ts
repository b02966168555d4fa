import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { sentDeliveryOf } from "./consumers.js";

describe("SENT events", () => {
  it("become the delivery a later bounce looks up", () => {
    const sentAt = new Date("2026-11-20T10:15:01Z");
    const event = create(MailEventSchema, {
      type: MailEventType.SENT, workspaceId: "ws_a", source: DeliverySource.BROADCAST, deliveryId: "d1", broadcastId: "cmp_1",
      messageId: "m1@a.test", recipient: "ann@example.test", contactId: "ctc_1", groupBy: "", occurredAt: timestampFromDate(sentAt),
    });
    expect(sentDeliveryOf(event)).toEqual({
      deliveryId: "d1", workspaceId: "ws_a", source: "broadcast", emailId: "", broadcastId: "cmp_1", messageId: "m1@a.test",
      recipient: "ann@example.test", contactId: "ctc_1", groupBy: "", sentAt,
    });
    // The route that carried it (DESIGN §9.7) goes on to provider-reported and bounce events.
    expect(sentDeliveryOf(create(MailEventSchema, { ...event, route: "ses-eu" }))).toMatchObject({ route: "ses-eu" });
    expect(sentDeliveryOf(create(MailEventSchema, { ...event, source: DeliverySource.UNSPECIFIED }))).toBeUndefined();
    expect(sentDeliveryOf(create(MailEventSchema, { ...event, recipient: "" }))).toBeUndefined();
  });
});
