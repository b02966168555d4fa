import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { handleMailEvent } from "./consumers.js";
import type { Enrolment } from "./domain/enrol.js";

describe("a relay provider's DELIVERED (DESIGN §9.7)", () => {
  it("triggers, resumes and ends no run: the enrolment is not touched", async () => {
    const touched: string[] = [];
    const enrolment = new Proxy({}, { get: (_t, name) => { touched.push(String(name)); return async () => undefined; } }) as Enrolment;
    await handleMailEvent(enrolment, create(MailEventSchema, {
      eventId: "evt_delivered", type: MailEventType.DELIVERED, source: DeliverySource.TRANSACTIONAL, workspaceId: "ws_a",
      emailId: "trs_1", recipient: "ann@example.test", contactId: "ct_1", route: "ses",
    }));
    expect(touched).toEqual([]);
  });
});
