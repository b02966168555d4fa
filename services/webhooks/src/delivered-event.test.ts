import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { mailEventOf } from "./consumers.js";

const base = { workspaceId: "ws_a", source: DeliverySource.TRANSACTIONAL, emailId: "trs_1", deliveryId: "trs_1", recipient: "ann@example.test", route: "ses" };

describe("relay provider events (DESIGN §9.7)", () => {
  it("a provider's DELIVERED sends no webhook: EMAIL_DELIVERED went with delivery's SENT", () => {
    expect(mailEventOf(create(MailEventSchema, { ...base, eventId: "evt_d", type: MailEventType.DELIVERED }), new Date())).toBeUndefined();
    expect(mailEventOf(create(MailEventSchema, { ...base, eventId: "evt_s", type: MailEventType.SENT }), new Date())?.kind).toBe("sent");
  });

  it("a provider's bounce and complaint are the same webhooks as any other", () => {
    expect(mailEventOf(create(MailEventSchema, { ...base, eventId: "evt_b", type: MailEventType.BOUNCED, permanent: true }), new Date())?.kind).toBe("bounced");
    expect(mailEventOf(create(MailEventSchema, { ...base, eventId: "evt_c", type: MailEventType.COMPLAINED }), new Date())?.kind).toBe("complained");
  });
});

describe("replies (DESIGN §10.4)", () => {
  it("REPLIED sends no webhook: the reply itself is EMAIL_RECEIVED, with its inReplyTo", () => {
    expect(mailEventOf(create(MailEventSchema, { ...base, eventId: "evt_r", type: MailEventType.REPLIED, detail: "rcv_1" }), new Date())).toBeUndefined();
    expect(mailEventOf(create(MailEventSchema, { ...base, source: DeliverySource.BROADCAST, broadcastId: "cmp_1", eventId: "evt_r2", type: MailEventType.REPLIED }), new Date())).toBeUndefined();
  });
});
