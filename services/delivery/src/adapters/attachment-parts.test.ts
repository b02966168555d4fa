import { createPrivateKey, generateKeyPairSync, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import DKIM from "nodemailer/lib/dkim";
import { DKIM_SIGNED_HEADERS } from "../domain/message.js";
import { signWhole } from "./smtp-transport.js";
import { AttachmentParts, attachmentEncodings, encodeAttachment } from "./attachment-parts.js";
import { buildMime } from "./mime.js";
import type { OutgoingMail } from "../domain/ports.js";

function mail(attachments: OutgoingMail["attachments"], text = "Hi"): OutgoingMail {
  return {
    lane: "transactional",
    envelope: { from: "b@bounces.example.test", to: "ann@example.test" },
    from: { name: "Acme", address: "team@example.test" },
    to: "ann@example.test",
    subject: "Files",
    html: '<p>Hi <img src="cid:pic"></p>',
    text,
    messageId: "<m1@example.test>",
    headers: [],
    attachments,
    meta: { deliveryId: "d1", workspaceId: "ws_test" },
  };
}

describe("attachment parts", () => {
  it("round-trips names outside ASCII, types from the extension, content ids without brackets or controls", async () => {
    const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 256));
    const parts = [
      encodeAttachment({ filename: "Résumé — été 2026, a rather long file name.pdf", content: bytes, contentType: "", contentId: "" }),
      encodeAttachment({ filename: "pic.png", content: bytes.subarray(0, 100), contentType: "image/png\r\nX-Evil: 1", contentId: "<pic>\r\n" }),
    ];
    const raw = buildMime(mail(parts), new Date("2030-01-02T03:04:05Z")).toString();
    expect(raw).not.toContain("X-Evil");
    const parsed = await PostalMime.parse(raw);
    // Document order: the inline part inside multipart/related, then the attachment.
    const [pic, doc] = parsed.attachments;
    expect(doc.filename).toBe("Résumé — été 2026, a rather long file name.pdf");
    expect(doc.mimeType).toBe("application/pdf");
    expect(Buffer.from(doc.content as ArrayBuffer).equals(bytes)).toBe(true);
    // A content type that is not a bare type/subtype is replaced by the extension's.
    expect(pic).toMatchObject({ mimeType: "image/png", contentId: "<pic>", disposition: "inline" });
    expect(parsed.text?.trim()).toBe("Hi");
    // Without a text body the root of multipart/related is the HTML itself.
    expect(buildMime(mail(parts, "")).toString()).toMatch(/multipart\/related; type="text\/html"/);
  });

  it("encodes a content's attachments once, and again only after the bytes budget evicted them", () => {
    const cache = new AttachmentParts(3 * 1024 * 1024);
    const one = [{ filename: "a.bin", content: Buffer.alloc(1024 * 1024, 1), contentType: "", contentId: "" }];
    const before = attachmentEncodings.count;
    const first = cache.partsOf("ws", "email:trs_1", one);
    expect(cache.partsOf("ws", "email:trs_1", one)).toBe(first);
    expect(attachmentEncodings.count - before).toBe(1);
    // Another workspace never shares an entry.
    cache.partsOf("ws_other", "email:trs_1", one);
    expect(attachmentEncodings.count - before).toBe(2);
    // Two more contents of ~1.35 MB encoded push the first one out of a 3 MB budget.
    cache.partsOf("ws", "email:trs_2", one);
    cache.partsOf("ws", "email:trs_3", one);
    cache.partsOf("ws", "email:trs_1", one);
    expect(attachmentEncodings.count - before).toBe(5);
  });
});

describe("signing a message with attachments", () => {
  it("writes byte for byte what nodemailer's DKIM signer writes", async () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const dkim = { domainName: "example.test", keySelector: "s1", privateKey: pem, headerFieldNames: DKIM_SIGNED_HEADERS };
    const m = mail([encodeAttachment({ filename: "a.bin", content: randomBytes(200 * 1024), contentType: "", contentId: "" })]);
    m.cc = ["Zoë Ü <zoe@example.test>"];
    m.headers = [{ key: "X-Long", value: "word ".repeat(40).trim() }];
    const raw = buildMime(m);
    const chunks: Buffer[] = [];
    for await (const c of new DKIM({ ...dkim, privateKey: createPrivateKey(pem) }).sign(raw) as AsyncIterable<Buffer | string>) chunks.push(Buffer.from(c));
    const ours = signWhole(raw, dkim, createPrivateKey(pem));
    expect(ours.toString("latin1")).toBe(Buffer.concat(chunks).toString("latin1"));
    expect(ours.toString("latin1")).toMatch(/^DKIM-Signature: /);
  });
});
