import { describe, expect, it } from "vitest";
import { contentDisposition } from "@mailroom/http/received-content.js";
import { formatBytes } from "./views/emails.js";

describe("the email page's attachments", () => {
  it("shows sizes as people read them", () => {
    expect([0, 1023, 1024, 1536, 300 * 1024, 10 * 1024 * 1024, 1024 ** 3 * 2].map(formatBytes)).toEqual(["0 B", "1023 B", "1 KB", "1.5 KB", "300 KB", "10 MB", "2 GB"]);
  });

  it("names the download exactly (RFC 5987) with a safe ASCII fallback, whatever the sender called the file", () => {
    expect(contentDisposition("report.pdf")).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    const tricky = contentDisposition('Q3 "final"\\é (1).pdf');
    expect(tricky).toBe(`attachment; filename="Q3 _final___ (1).pdf"; filename*=UTF-8''Q3%20%22final%22%5C%C3%A9%20%281%29.pdf`);
    // A line break cannot end the header: it is encoded in both forms.
    expect(contentDisposition("a\r\nX-Evil: 1")).not.toMatch(/[\r\n]/);
    expect(contentDisposition("")).toMatch(/^attachment; filename="attachment"/);
  });
});

describe("the email page's delivery route", () => {
  it("names the route of each step and keeps a provider's confirmation beside the delivery", async () => {
    const { create } = await import("@bufbuild/protobuf");
    const { timestampFromDate } = await import("@bufbuild/protobuf/wkt");
    const { EmailRecordSchema, EmailStatus } = await import("@mailroom/proto/email/v1/email_pb.js");
    const { routeOf, timeline } = await import("./views/emails.js");
    const at = (s: number) => timestampFromDate(new Date(Date.UTC(2030, 0, 1, 0, 0, s)));
    const e = create(EmailRecordSchema, {
      id: "trs_1", status: EmailStatus.DELIVERED, createdAt: at(0), sentAt: at(1),
      outcomes: {
        route: "backup", deliveredRoute: "backup", deliveredAt: at(5),
        deferrals: 2, lastDeferredAt: at(3), lastDeferredRoute: "primary", lastDeferredDetail: "451 greylisted",
        confirmedAt: at(9), confirmedRoute: "backup",
      },
    });
    expect(routeOf(e)).toBe("backup");
    expect(timeline(e).map((t) => [t.label, t.detail])).toEqual([
      ["Accepted by the API", undefined],
      ["Sent (handed to delivery)", undefined],
      ["Deferred (2 times, the latest shown) via route primary, retried later", "451 greylisted"],
      ["Delivered (accepted by the receiving server) via route backup", undefined],
      ["Delivery confirmed by the relay provider via route backup: the recipient's server accepted it", undefined],
    ]);
    expect(routeOf(create(EmailRecordSchema, { id: "trs_2" }))).toBe("");
  });
});
