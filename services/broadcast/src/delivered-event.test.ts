import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { broadcastEventOf } from "./consumers.js";

describe("a relay provider's DELIVERED of a broadcast recipient (DESIGN §9.7)", () => {
  it("is not counted: the recipient was counted sent and delivered with delivery's SENT", () => {
    const event = { workspaceId: "ws_a", source: DeliverySource.BROADCAST, broadcastId: "cmp_1", deliveryId: "dlv_1", contactId: "ct_1", route: "ses" };
    expect(broadcastEventOf(create(MailEventSchema, { ...event, eventId: "evt_d", type: MailEventType.DELIVERED }))).toBeUndefined();
    expect(broadcastEventOf(create(MailEventSchema, { ...event, eventId: "evt_s", type: MailEventType.SENT }))?.kind).toBe("sent");
    expect(broadcastEventOf(create(MailEventSchema, { ...event, eventId: "evt_b", type: MailEventType.BOUNCED }))?.kind).toBe("bounced");
  });
});
