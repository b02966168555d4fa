import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ReceivedEmailSchema } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { receivedEmailView, receivedListView } from "./received.js";

const HOSTILE = '<script>alert(1)</script>"';
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;";

describe("received emails views", () => {
  const email = create(ReceivedEmailSchema, {
    id: "rcv_1", subject: HOSTILE, from: { name: HOSTILE, address: "a@b.test" }, envelopeTo: [HOSTILE], text: HOSTILE, strippedTextReply: HOSTILE,
    html: `<p onclick="x()">${HOSTILE}</p>`, headers: [{ name: HOSTILE, value: HOSTILE }],
    attachments: [{ id: "att_1", filename: HOSTILE, contentType: HOSTILE, size: 10n }],
  });

  it("escapes the list and what was searched for", () => {
    const page = receivedListView({ to: HOSTILE, from: "", since: "", cursor: "c1" }, [email], "c2").toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<td data-label="From">${ESCAPED} &lt;a@b.test&gt;</td>`);
    expect(page).toContain(`<a href="/console/received/rcv_1">${ESCAPED}</a>`);
    expect(page).toContain(`name="to" type="search" value="${ESCAPED}"`);
    expect(page).toContain('rel="next" href="/console/received?to=%3Cscript%3Ealert%281%29%3C%2Fscript%3E%22&amp;cursor=c2">Older emails</a>');
    expect(page).toContain("1 email shown (filtered).");
  });

  it("escapes an email's details, reply, text, headers and attachments; its HTML only inside srcdoc", () => {
    const page = receivedEmailView(email).toString();
    expect(page).not.toContain("<script>");
    expect(page).not.toContain('<p onclick="x()">');
    expect(page).toContain(`<h1>${ESCAPED}</h1>`);
    expect(page).toContain(`<pre id="stripped-reply">${ESCAPED}</pre>`);
    expect(page).toContain(`<pre id="text">${ESCAPED}</pre>`);
    expect(page).toContain(`<tr><th scope="row">${ESCAPED}</th><td><code>${ESCAPED}</code></td></tr>`);
    expect(page).toContain(`download="${ESCAPED}">${ESCAPED}</a>`);
    expect(page).toContain(`&lt;body&gt;&lt;p onclick=&quot;x()&quot;&gt;${ESCAPED}&lt;/p&gt;`);
    expect(page).toContain('sandbox="" referrerpolicy="no-referrer" srcdoc="&lt;!doctype html&gt;');
  });
});
