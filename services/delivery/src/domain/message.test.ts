import { describe, expect, it } from "vitest";
import { buildMail, customHeaders, DKIM_SIGNED_HEADERS, listUnsubscribe } from "./message.js";
import { parseVerpAddress } from "@mailroom/content/verp.js";
import { testJob } from "../testing.js";
import type { MergedContent } from "./ports.js";

const merged: MergedContent = {
  subject: "Hello\r\nBcc: x@y.test",
  html: "<p>hi</p>",
  text: "hi",
  previewText: "",
  unsubscribeUrl: "https://mail.example.test/u/tok.abc",
  listUnsubscribeUrl: "https://mail.example.test/u/tok.abc",
};
const key = { domain: "acme.test", selector: "mr1", privateKeyPem: "-----BEGIN PRIVATE KEY-----…" };

describe("buildMail", () => {
  it("puts the List-Unsubscribe pair on broadcast and test messages, not on transactional ones", () => {
    for (const source of ["broadcast", "test"] as const) {
      const mail = buildMail(testJob({ source, broadcastId: "cmp_1" }), merged, { allowed: true, address: "news@acme.test", name: "" });
      const h = Object.fromEntries(mail.headers.map((x) => [x.key, x.value]));
      expect(h["List-Unsubscribe"]).toBe("<https://mail.example.test/u/tok.abc>, <mailto:unsubscribe+tok.abc@bounces.acme.test>");
      expect(h["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    }
    const tx = buildMail(testJob(), merged, { allowed: true, address: "news@acme.test", name: "" });
    expect(tx.headers.map((x) => x.key)).toEqual(["X-Mailroom-Delivery-Id"]);
  });

  it("puts the List-Unsubscribe pair on an automation's email: a transactional job whose content offers an unsubscribe", () => {
    const sender = { allowed: true, address: "team@acme.test", name: "" };
    const automation = buildMail(testJob(), { ...merged, offersUnsubscribe: true }, sender);
    expect(automation.lane).toBe("transactional");
    const h = Object.fromEntries(automation.headers.map((x) => [x.key, x.value]));
    expect(h["List-Unsubscribe"]).toBe("<https://mail.example.test/u/tok.abc>, <mailto:unsubscribe+tok.abc@bounces.acme.test>");
    expect(h["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    // Transactional content (a public API email) stays without them.
    expect(buildMail(testJob(), { ...merged, offersUnsubscribe: false }, sender).headers.map((x) => x.key)).toEqual(["X-Mailroom-Delivery-Id"]);
  });

  it("sends from the delivery's VERP return path on the bounce domain, the List-Unsubscribe mailto on the same domain", () => {
    const job = testJob({ source: "broadcast", broadcastId: "cmp_1" });
    const sender = { allowed: true, address: "news@acme.test", name: "" };
    const own = buildMail(job, merged, sender, 0, { secret: "s3cret-for-verp-tests" });
    expect(parseVerpAddress("s3cret-for-verp-tests", own.envelope.from)).toEqual({ deliveryId: job.deliveryId, domain: "bounces.acme.test" });
    const shared = buildMail(job, merged, sender, 0, { secret: "s3cret-for-verp-tests", bounceDomain: "bounce.mailroom.test" });
    expect(shared.envelope.from).toMatch(/^bounces\+[a-z2-7]+@bounce\.mailroom\.test$/);
    expect(shared.headers.find((h) => h.key === "List-Unsubscribe")?.value).toContain("mailto:unsubscribe+tok.abc@bounce.mailroom.test");
    // An id too long for a local part keeps the plain sender as the envelope sender.
    expect(buildMail(testJob({ deliveryId: "x".repeat(40) }), merged, sender, 0, { secret: "s" }).envelope.from).toBe("news@acme.test");
  });

  it("carries the delivery id, message id, prefix and a subject that cannot break its header line", () => {
    const job = testJob({ subjectPrefix: "[TEST] " });
    const mail = buildMail(job, merged, { allowed: true, address: "news@acme.test", name: "" });
    expect(mail.headers[0]).toEqual({ key: "X-Mailroom-Delivery-Id", value: job.deliveryId });
    expect(mail.messageId).toBe(`<${job.messageId}>`);
    expect(mail.subject).toBe("[TEST] Hello Bcc: x@y.test");
    expect(mail.from).toEqual({ name: "Acme", address: "news@acme.test" });
  });

  it("keeps NUL and other control characters of merged values out of the Subject header", () => {
    const mail = buildMail(testJob(), { ...merged, subject: "Hi\u0000Ann\u000b\u000c\u001b[31m!\u007f" }, { allowed: true, address: "news@acme.test", name: "" });
    expect(mail.subject).toBe("Hi Ann [31m!");
  });

  it("signs with the domain's key only for that domain and its subdomains, covering both List-Unsubscribe headers", () => {
    const sign = (address: string) => buildMail(testJob(), merged, { allowed: true, address, name: "", dkim: key }).dkim;
    expect(sign("news@acme.test")).toMatchObject({ domainName: "acme.test", keySelector: "mr1" });
    expect(sign("news@mail.acme.test")).toBeDefined();
    expect(sign("news@evilacme.test")).toBeUndefined();
    expect(DKIM_SIGNED_HEADERS.split(":")).toEqual(expect.arrayContaining(["List-Unsubscribe", "List-Unsubscribe-Post", "From", "Subject"]));
  });

  it("falls back to the https link alone when the URL has no token segment", () => {
    expect(listUnsubscribe("https://x.test/", "acme.test")).toBe("<https://x.test/>");
  });

  it("moves a token too long for a mailbox local part (64 octets) into the mailto subject", () => {
    const token = "t".repeat(60);
    expect(listUnsubscribe(`https://x.test/u/${token}`, "acme.test")).toBe(
      `<https://x.test/u/${token}>, <mailto:unsubscribe@acme.test?subject=unsubscribe%20${token}>`,
    );
  });

  it("writes internationalised domains in their ASCII form", () => {
    const mail = buildMail(testJob({ recipient: { email: "anna@bücher.test", contactId: "c", variables: {} } }), merged, { allowed: true, address: "news@acme.test", name: "" });
    expect(mail.to).toBe("anna@xn--bcher-kva.test");
    expect(mail.envelope.to).toBe("anna@xn--bcher-kva.test");
  });
});

describe("custom headers (DESIGN §9.5)", () => {
  it("keeps the sender's order after the system's, and never one the system sets or that could break a line", () => {
    const system = [{ key: "X-Mailroom-Delivery-Id" }, { key: "List-Unsubscribe" }];
    const out = customHeaders(
      [
        { name: "X-Ticket", value: "T-1" },
        { name: "Bcc", value: "x@example.test" },
        { name: "content-type", value: "text/plain" },
        { name: "x-mailroom-delivery-id", value: "forged" },
        { name: "List-Unsubscribe", value: "<https://evil.test>" },
        { name: "Reply-To", value: "other@example.test" },
        { name: "X-Bad Name", value: "v" },
        { name: "X-Split", value: "a\r\nBcc: y@example.test" },
        { name: "X-Note", value: "café\ttab" },
        { name: "X-Ticket", value: "T-2" },
      ],
      system,
      true,
    );
    expect(out.map((h) => h.key)).toEqual(["X-Ticket", "X-Note", "X-Ticket"]);
    expect(out[0].value).toBe("T-1");
    expect(out[1].value).toMatch(/^=\?UTF-8\?Q\?/i);
    expect(out[2].value).toBe("T-2");
    // Without a Reply-To of its own, the email may set one as a custom header.
    expect(customHeaders([{ name: "Reply-To", value: "r@example.test" }], system, false)).toEqual([{ key: "Reply-To", value: "r@example.test" }]);
  });
});
