import { describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { validateExtras } from "./extras.js";
import type { EmailRequest } from "./model.js";

const base = (over: Partial<EmailRequest>): EmailRequest => ({
  to: "ann@example.test",
  content: { kind: "raw", from: "team@acme.test", subject: "Hi", html: "<p>Hi</p>" },
  ...over,
});

function refusal(over: Partial<EmailRequest>): AppError {
  try {
    validateExtras(base(over), "ann@example.test");
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).httpStatus).toBe(400);
    return err as AppError;
  }
  throw new Error("accepted");
}

const file = (filename: string, size = 3, more: { contentType?: string; contentId?: string } = {}) => ({ filename, content: new Uint8Array(size), ...more });

/** DESIGN §9.5: what an email can carry, checked by the service itself (the SMTP submission unit calls it directly). */
describe("cc, bcc, headers, attachments and tags", () => {
  it("takes them: bare envelope addresses (duplicates of to or of each other left out), content types from the extension", () => {
    const v = validateExtras(
      base({
        cc: ["Bob <bob@example.test>", "ANN@example.test", "bob@example.test"],
        bcc: ["eve@example.test"],
        headers: [{ name: "X-Campaign", value: "q3\tspring" }, { name: "In-Reply-To", value: "<a@b>" }],
        attachments: [file("invoice.pdf"), file("logo.png", 10, { contentId: "<logo@acme>" }), file("data", 1, { contentType: "Text/CSV" })],
        tags: [{ name: "kind", value: "invoice" }, { name: "user_id", value: "u-42" }],
      }),
      "ann@example.test",
    );
    expect(v.cc).toEqual(["bob@example.test"]);
    expect(v.bcc).toEqual(["eve@example.test"]);
    expect(v.headers.map((h) => h.name)).toEqual(["X-Campaign", "In-Reply-To"]);
    expect(v.attachments.map((a) => [a.filename, a.contentType, a.size, a.contentId])).toEqual([
      ["invoice.pdf", "application/pdf", 3, undefined],
      ["logo.png", "image/png", 10, "logo@acme"],
      ["data", "text/csv", 1, undefined],
    ]);
    expect(v.tags).toHaveLength(2);
  });

  it("counts to, cc and bcc together: 50 recipients pass, 51 are too_many_recipients", () => {
    const addrs = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}${i}@example.test`);
    expect(validateExtras(base({ cc: addrs(30, "c"), bcc: addrs(19, "b") }), "ann@example.test").bcc).toHaveLength(19);
    const err = refusal({ cc: addrs(30, "c"), bcc: addrs(20, "b") });
    expect(err.code).toBe("too_many_recipients");
    expect(err.message).toContain("51");
  });

  it("refuses a malformed cc or bcc address naming the field and index, and line breaks as header injection", () => {
    const bad = refusal({ cc: ["bob@example.test", "not an address"] });
    expect([bad.code, bad.message]).toEqual(["invalid_request", expect.stringContaining("cc[1]")]);
    expect(refusal({ bcc: ["eve@example.test\r\nBcc: x@y.z"] }).code).toBe("header_injection");
  });

  it("refuses each header the system sets or that changes routing, case-insensitively, naming it", () => {
    for (const name of ["From", "to", "CC", "Bcc", "Subject", "Date", "Message-ID", "Return-Path", "Sender", "DKIM-Signature",
      "List-Unsubscribe", "List-Unsubscribe-Post", "Content-Type", "content-transfer-encoding", "MIME-Version", "Received"]) {
      const err = refusal({ headers: [{ name: "X-Ok", value: "1" }, { name, value: "v" }] });
      expect(err.code).toBe("header_not_allowed");
      expect(err.message).toContain(name);
      expect(err.details.extra).toEqual({ header: JSON.stringify(name) });
    }
  });

  it("refuses header names that are not RFC 5322 field names and values with line breaks", () => {
    for (const name of ["X Space", "X:Colon", "", "X-Ünï"]) expect(refusal({ headers: [{ name, value: "v" }] }).message).toContain("headers[0]");
    const injected = refusal({ headers: [{ name: "X-A", value: "ok\r\nBcc: spy@evil.test" }] });
    expect([injected.code, injected.message]).toEqual(["header_injection", expect.stringContaining("headers[0]")]);
  });

  it("refuses executables by extension or content type, naming the file; octet-stream stays allowed", () => {
    for (const name of ["setup.EXE", "run.bat", "x.vbs", "a.msi", "cert.crt", "s.scr", "link.lnk"]) {
      const err = refusal({ attachments: [file("ok.pdf"), file(name)] });
      expect(err.code).toBe("attachment_type_not_allowed");
      expect(err.message).toContain(name);
      expect(err.details.extra).toEqual({ filename: JSON.stringify(name) });
    }
    expect(refusal({ attachments: [file("harmless.txt", 1, { contentType: "application/x-msdownload" })] }).code).toBe("attachment_type_not_allowed");
    expect(validateExtras(base({ attachments: [file("blob", 1, { contentType: "application/octet-stream" })] }), "ann@example.test").attachments).toHaveLength(1);
  });

  it("allows 10 MB of attachments decoded and refuses one byte more with attachments_too_large", () => {
    const half = 5 * 1024 * 1024;
    expect(validateExtras(base({ attachments: [file("a.bin.pdf", half), file("b.pdf", half)] }), "ann@example.test").attachments).toHaveLength(2);
    const err = refusal({ attachments: [file("a.pdf", half), file("b.pdf", half + 1)] });
    expect(err.code).toBe("attachments_too_large");
  });

  it("refuses a missing filename, a bad content type or content id, naming the index", () => {
    expect(refusal({ attachments: [file("a.pdf"), file("  ")] }).message).toContain("attachments[1].filename");
    expect(refusal({ attachments: [file("a.pdf", 1, { contentType: "pdf" })] }).message).toContain("attachments[0].contentType");
    expect(refusal({ attachments: [file("a.png", 1, { contentId: "has space" })] }).message).toContain("attachments[0].contentId");
    expect(refusal({ attachments: [file("a.png", 1, { contentId: "x" }), file("b.png", 1, { contentId: "x" })] }).message).toContain("attachments[1]");
    expect(refusal({ attachments: [file("a\r\n.pdf")] }).code).toBe("header_injection");
  });

  it("takes at most 10 tags of letters, digits, _ and - (1 to 256 each); invalid_tags names the tag and the rule", () => {
    const tags = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `t${i}`, value: "v" }));
    expect(validateExtras(base({ tags: tags(10) }), "ann@example.test").tags).toHaveLength(10);
    expect(refusal({ tags: tags(11) }).code).toBe("invalid_tags");
    const bad = refusal({ tags: [{ name: "ok", value: "1" }, { name: "kind", value: "in voice" }] });
    expect([bad.code, bad.message]).toEqual(["invalid_tags", expect.stringMatching(/tags\[1\]\.value .*letters, digits/)]);
    expect(refusal({ tags: [{ name: "", value: "v" }] }).message).toContain("tags[0].name");
    expect(refusal({ tags: [{ name: "n", value: "v".repeat(257) }] }).code).toBe("invalid_tags");
    expect(validateExtras(base({ tags: [{ name: "n".repeat(256), value: "v".repeat(256) }] }), "ann@example.test").tags).toHaveLength(1);
  });
});
