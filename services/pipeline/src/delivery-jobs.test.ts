import { describe, expect, it } from "vitest";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { DeliveryJobSchema, DeliveryPageSchema, DeliverySource } from "@mailroom/proto/events/v1/events_pb.js";
import { deliveryJobOf, deliveryPageOf } from "./delivery-jobs.js";
import { variablesJson } from "./work.js";

const decode = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as unknown;

/** The one builder of the protobuf jobs from the wire-free specs of work.ts. */
describe("delivery job specs to protobuf", () => {
  it("builds a single job: source enum, Reply-To list with its first address in the old field, dates as timestamps", () => {
    const enqueuedAt = new Date("2025-01-02T03:04:05.678Z");
    const notBefore = new Date("2025-01-02T03:05:00.000Z");
    const job = fromBinary(
      DeliveryJobSchema,
      toBinary(
        DeliveryJobSchema,
        deliveryJobOf({
          deliveryId: "dlv_1",
          workspaceId: "ws_a",
          source: "test",
          messageId: "m@a.test",
          broadcastId: "cmp_1",
          recipient: { email: "ann@x.test", variablesJson: variablesJson({ firstName: "Ann" }) },
          fromEmail: "news@a.test",
          replyTo: ["a@a.test", "Bee <b@a.test>"],
          contentRef: "broadcast:cmp_1",
          subjectPrefix: "[TEST] ",
          enqueuedAt,
          notBefore,
        }),
      ),
    );
    expect(job).toMatchObject({
      deliveryId: "dlv_1",
      source: DeliverySource.BROADCAST_TEST,
      emailId: "",
      fromName: "",
      replyTo: "a@a.test",
      replyToList: ["a@a.test", "Bee <b@a.test>"],
      subjectPrefix: "[TEST] ",
      groupBy: "",
      requestId: "",
    });
    expect(job.recipient?.contactId).toBe("");
    expect(job.recipient?.variables).toBeUndefined();
    expect(decode(job.recipient!.variablesJson)).toEqual({ firstName: "Ann" });
    expect(timestampDate(job.enqueuedAt!)).toEqual(enqueuedAt);
    expect(timestampDate(job.notBefore!)).toEqual(notBefore);
  });

  it("carries the other envelope recipients (cc, bcc) and the tags (DESIGN §9.5)", () => {
    const job = fromBinary(
      DeliveryJobSchema,
      toBinary(
        DeliveryJobSchema,
        deliveryJobOf({
          deliveryId: "trs_9", workspaceId: "ws_a", source: "transactional", messageId: "m@a.test",
          recipient: { email: "ann@x.test" }, fromEmail: "hi@a.test", contentRef: "email:trs_9", enqueuedAt: new Date(),
          cc: ["bob@x.test"], bcc: ["eve@x.test", "zed@x.test"], tags: [{ name: "kind", value: "invoice" }],
        }),
      ),
    );
    expect(job.cc).toEqual(["bob@x.test"]);
    expect(job.bcc).toEqual(["eve@x.test", "zed@x.test"]);
    expect(job.tags.map((t) => [t.name, t.value])).toEqual([["kind", "invoice"]]);
    const plain = deliveryJobOf({
      deliveryId: "trs_8", workspaceId: "ws_a", source: "transactional", messageId: "m@a.test",
      recipient: { email: "ann@x.test" }, fromEmail: "hi@a.test", contentRef: "email:trs_8", enqueuedAt: new Date(),
    });
    expect([plain.cc, plain.bcc, plain.tags]).toEqual([[], [], []]);
  });

  it("leaves not_before unset and Reply-To empty when the spec has none", () => {
    const job = deliveryJobOf({
      deliveryId: "dlv_2", workspaceId: "ws_a", source: "transactional", messageId: "m@a.test",
      recipient: { email: "ann@x.test" }, fromEmail: "hi@a.test", contentRef: "email:trs_2", enqueuedAt: new Date(),
    });
    expect(job.source).toBe(DeliverySource.TRANSACTIONAL);
    expect(job.notBefore).toBeUndefined();
    expect(job.replyTo).toBe("");
    expect(job.replyToList).toEqual([]);
    expect(job.recipient?.variablesJson).toHaveLength(0);
  });

  it("builds a page: a broadcast's, every recipient with its own values", () => {
    const page = fromBinary(
      DeliveryPageSchema,
      toBinary(
        DeliveryPageSchema,
        deliveryPageOf({
          pageId: "pg_1", workspaceId: "ws_a", broadcastId: "cmp_1", contentRef: "broadcast:cmp_1",
          fromEmail: "news@a.test", fromName: "News", replyTo: ["r@a.test"], enqueuedAt: new Date(), requestId: "req_1",
          recipients: [
            { deliveryId: "d1", messageId: "m1@a.test", email: "a@x.test", contactId: "c1", variablesJson: variablesJson({ n: 1 }) },
            { deliveryId: "d2", messageId: "m2@a.test", email: "b@x.test", contactId: "c2", variablesJson: variablesJson({}) },
          ],
        }),
      ),
    );
    expect(page).toMatchObject({ pageId: "pg_1", source: DeliverySource.BROADCAST, fromName: "News", replyToList: ["r@a.test"], subjectPrefix: "", requestId: "req_1" });
    expect(page.recipients.map((r) => r.deliveryId)).toEqual(["d1", "d2"]);
    expect(decode(page.recipients[0].variablesJson)).toEqual({ n: 1 });
    expect(page.recipients[1].variablesJson).toHaveLength(0);
  });
});
