import { describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { emailsOf, htmlOfText, idempotencyKeyOf, tagsOf } from "./message.js";
import { isLoopback } from "./smtp.js";

const parse = (raw: string) => PostalMime.parse(raw.replace(/\n/g, "\r\n"));

const MESSAGE = `From: "Acme Billing" <billing@acme.test>
To: Ann <ann@example.test>, bob@example.test
Cc: Carol <carol@example.test>
Reply-To: help@acme.test
Subject: Your invoice
Message-ID: <inv-1@acme.test>
In-Reply-To: <inv-0@acme.test>
References: <thread@acme.test> <inv-0@acme.test>
User-Agent: Acme ERP 7
X-Ticket: 42
X-Mailroom-Tags: kind=invoice, plan=pro
X-Priority: 1
List-Unsubscribe: <mailto:x@acme.test>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: multipart/related; boundary="b2"

--b2
Content-Type: text/html; charset=utf-8

<p>Logo: <img src="cid:logo@acme"></p>
--b2
Content-Type: image/png
Content-ID: <logo@acme>
Content-Disposition: inline
Content-Transfer-Encoding: base64

iVBORw0KGgo=
--b2--
--b1
Content-Type: application/pdf; name="invoice.pdf"
Content-Disposition: attachment; filename="invoice.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--b1--
`;

describe("emailsOf", () => {
  it("sends one email per To recipient of the envelope, Cc and blind recipients on the first only", async () => {
    const envelope = { mailFrom: "bounce@acme.test", rcptTo: ["ann@example.test", "bob@example.test", "carol@example.test", "dave@example.test"] };
    const emails = emailsOf(await parse(MESSAGE), envelope, "ws_acme");
    expect(emails.map((e) => [e.to, e.cc, e.bcc])).toEqual([
      ['"Ann" <ann@example.test>', ['"Carol" <carol@example.test>'], ["dave@example.test"]],
      ["bob@example.test", [], []],
    ]);
    const [first] = emails;
    expect(first).toMatchObject({ from: "billing@acme.test", fromName: "Acme Billing", subject: "Your invoice", replyTo: ["help@acme.test"] });
    expect(first!.html).toContain('cid:logo@acme');
    // X-* and threading headers (List-Unsubscribe and MIME headers are the system's, others dropped), tags from their header.
    expect(first!.headers).toEqual([
      { name: "In-Reply-To", value: "<inv-0@acme.test>" },
      { name: "References", value: "<thread@acme.test> <inv-0@acme.test>" },
      { name: "X-Ticket", value: "42" },
      { name: "X-Priority", value: "1" },
    ]);
    expect(first!.tags).toEqual([{ name: "kind", value: "invoice" }, { name: "plan", value: "pro" }]);
    expect(first!.attachments.map((a) => [a.filename, a.contentType, a.contentId, Buffer.from(a.content).toString("base64")])).toEqual([
      ["logo.png", "image/png", "logo@acme", "iVBORw0KGgo="],
      ["invoice.pdf", "application/pdf", "", "JVBERi0xLjQK"],
    ]);
    // One key per recipient, stable for a resubmission of the same Message-ID.
    expect(first!.idempotencyKey).toBe(idempotencyKeyOf("ws_acme", "<inv-1@acme.test>", "ann@example.test"));
    expect(emails[1]!.idempotencyKey).not.toBe(first!.idempotencyKey);
  });

  it("leaves out To recipients the envelope does not name, and sends each blind-only recipient alone", async () => {
    const message = await parse("From: a@acme.test\nTo: undisclosed-recipients:;\nSubject: s\n\nhello\n");
    const emails = emailsOf(message, { mailFrom: "a@acme.test", rcptTo: ["x@example.test", "y@example.test"] }, "ws");
    expect(emails.map((e) => [e.to, e.cc, e.bcc])).toEqual([["x@example.test", [], []], ["y@example.test", [], []]]);
    // Without a Message-ID there is nothing to be idempotent on.
    expect(emails[0]!.idempotencyKey).toBe("");
  });

  it("gives a text-only message HTML and a missing subject a placeholder; uses the envelope sender without a From", async () => {
    const [e] = emailsOf(await parse("To: x@example.test\n\nline <1>\nline 2\n\npara\n"), { mailFrom: "env@acme.test", rcptTo: ["x@example.test"] }, "ws");
    expect(e).toMatchObject({ from: "env@acme.test", subject: "(no subject)" });
    expect(e!.html).toBe("<p>line &lt;1&gt;<br>\nline 2</p>\n<p>para</p>");
    expect(e!.text).toContain("line <1>");
  });
});

describe("helpers", () => {
  it("reads tags, escapes text and knows loopback", () => {
    expect(tagsOf("a=1; b = two ,c")).toEqual([{ name: "a", value: "1" }, { name: "b", value: "two" }, { name: "c", value: "" }]);
    expect(htmlOfText("  ")).toBe("<p></p>");
    expect(["127.0.0.1", "::1", "::ffff:127.0.0.1"].every(isLoopback)).toBe(true);
    expect(["10.0.0.1", "::ffff:10.0.0.1", "192.168.1.127"].some(isLoopback)).toBe(false);
  });
});

describe("unnamed parts", () => {
  it("names an attachment without a filename after its content id (or its place) and its type's extension, never an executable one", async () => {
    const raw = `From: a@acme.test
To: x@example.test
Subject: s
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b"

--b
Content-Type: text/plain

hello
--b
Content-Type: image/png
Content-ID: <chart@acme>
Content-Disposition: inline
Content-Transfer-Encoding: base64

iVBORw0KGgo=
--b
Content-Type: application/octet-stream
Content-Disposition: attachment
Content-Transfer-Encoding: base64

AAEC
--b--
`;
    const [email] = emailsOf(await parse(raw), { mailFrom: "a@acme.test", rcptTo: ["x@example.test"] }, "ws");
    expect(email!.attachments.map((a) => a.filename)).toEqual(["chart.png", "attachment-2.dat"]);
  });
});
