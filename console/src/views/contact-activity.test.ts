import { describe, expect, it } from "vitest";
import type { ActivityItem } from "@mailroom/http/contact-activity.js";
import { activityUnavailableView, activityView } from "./contact-activity.js";

const HOSTILE = '<script>alert(1)</script>"';

describe("contact activity views", () => {
  it("escapes what the units said, and ids in links", () => {
    const items = [
      { type: "event", occurredAt: "2026-01-01T00:00:00Z", name: HOSTILE, properties: { a: HOSTILE } },
      { type: "email_sent", occurredAt: "2026-01-01T00:00:00Z", emailId: `trs_"${HOSTILE}`, subject: HOSTILE, emailStatus: "FAILED" },
    ] as unknown as ActivityItem[];
    const page = activityView({ contactId: "ctc_1", items, cursor: "c1", next: "c&2" }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain("<strong>Event</strong> <code>&lt;script&gt;alert(1)&lt;/script&gt;&quot;</code>");
    expect(page).toContain('<a href="/console/emails/trs_%22%3Cscript%3Ealert(1)%3C%2Fscript%3E%22">“&lt;script&gt;');
    expect(page).toContain('<a href="/console/contacts/ctc_1#act-tl-h">Newest</a> · <a href="/console/contacts/ctc_1?activity=c%262#act-tl-h" rel="next">Older activity</a>');
    expect(activityUnavailableView("ctc_1", HOSTILE).toString()).toContain("right now: &lt;script&gt;alert(1)&lt;/script&gt;&quot;.");
  });
});
