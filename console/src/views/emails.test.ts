import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { EmailRecordSchema, EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { emailListView, emailPageView } from "./emails.js";

const HOSTILE = '"><script>alert(1)</script>';
const query = { recipient: HOSTILE, status: "sent", groupBy: "", tag: "", from: "", to: "", cursor: "c&1" };

describe("emails views", () => {
  const e = create(EmailRecordSchema, {
    id: "trs_1", to: `a${HOSTILE}@x.test`, subject: HOSTILE, status: EmailStatus.FAILED, statusReason: "<b>550</b>", groupBy: HOSTILE,
    tags: [{ name: "k", value: "v<1>" }], headers: [{ name: "X-A", value: HOSTILE }],
    attachments: [{ filename: `f${HOSTILE}.pdf`, contentType: "application/pdf", size: 1536n }],
  });

  it("escapes the search form's values and the rows", () => {
    const page = emailListView(query, [e], "n&2").toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('name="recipient" type="search" value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(page).toContain('<option value="sent" selected>Sent</option>');
    expect(page).toContain(">a&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;@x.test</a>");
    expect(page).toContain('<span class="muted">k: v&lt;1&gt;</span>');
    expect(page).toContain('rel="next" href="/console/emails?recipient=%22%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E&amp;status=sent&amp;cursor=n%262"');
    expect(emailListView({ ...query, recipient: "", status: "" , cursor: "" }, [], "").toString()).toContain("No emails yet. Send one with <code>POST /v1/emails</code>.");
  });

  it("escapes one email's details, attachments and content (srcdoc, text)", () => {
    const page = emailPageView(e, { html: `<a href="x?a=1&b='2'">"hi"</a>`, text: "</pre><script>alert(1)</script>" }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain("<h1>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</h1>");
    expect(page).toContain('<span class="muted">&lt;b&gt;550&lt;/b&gt;</span>');
    expect(page).toContain("<tr><th scope=\"row\">Header X-A</th><td>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</td></tr>");
    expect(page).toContain('download="f&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;.pdf"');
    expect(page).toContain('<td data-label="Size" class="num">1.5 KB</td>');
    expect(page).toContain('srcdoc="&lt;a href=&quot;x?a=1&amp;b=&#39;2&#39;&quot;&gt;&quot;hi&quot;&lt;/a&gt;"');
    expect(page).toContain("<pre>&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;</pre>");
    expect(emailPageView(e, undefined).toString()).toContain("it is no longer stored.");
  });
});
