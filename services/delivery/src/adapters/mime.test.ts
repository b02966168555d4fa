import { describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { bodyPart, buildMime, formatAddress, parseAddress } from "./mime.js";
import type { OutgoingMail } from "../domain/ports.js";

const mail = (over: Partial<OutgoingMail> = {}): OutgoingMail => ({
  lane: "transactional",
  envelope: { from: "news@acme.test", to: "ann@example.test" },
  from: { name: "Acme", address: "news@acme.test" },
  to: "ann@example.test",
  subject: "Hello",
  html: "<p>Hello</p>",
  text: "Hello",
  messageId: "<m1@acme.test>",
  headers: [{ key: "X-Mailroom-Delivery-Id", value: "dlv_1" }],
  meta: { deliveryId: "dlv_1", workspaceId: "ws" },
  ...over,
});

describe("buildMime", () => {
  it("round-trips non-ASCII names, subject and bodies through a real MIME parser", async () => {
    const subject = "Grüße aus Köln — ein sehr langer Betreff, der gefaltet werden muss ✓ ".repeat(2).trim();
    const raw = buildMime(mail({
      from: { name: "Café Ünïcode", address: "news@acme.test" },
      replyTo: '"Support, Team" <help@acme.test>',
      subject,
      html: "<p>Zoë ❤</p>",
      text: "Zoë ❤",
    })).toString("latin1");
    for (const line of raw.split("\r\n\r\n")[0].split("\r\n")) expect(line.length).toBeLessThanOrEqual(78);
    const parsed = await PostalMime.parse(raw);
    expect(parsed.subject).toBe(subject);
    expect(parsed.from).toMatchObject({ name: "Café Ünïcode", address: "news@acme.test" });
    expect(parsed.replyTo?.[0]).toMatchObject({ name: "Support, Team", address: "help@acme.test" });
    expect(parsed.messageId).toBe("<m1@acme.test>");
    expect(parsed.html).toBe("<p>Zoë ❤</p>");
    expect(parsed.text).toBe("Zoë ❤");
    expect(parsed.headers.find((h) => h.key === "x-mailroom-delivery-id")?.value).toBe("dlv_1");
  });

  it("puts every address of a Reply-To list in one Reply-To header", async () => {
    const raw = buildMime(mail({ replyTo: ["help@acme.test", '"Sales, EU" <sales@acme.test>', "Zoë <zoe@acme.test>"] })).toString("latin1");
    expect(raw.match(/^Reply-To:/gm)).toHaveLength(1);
    const parsed = await PostalMime.parse(raw);
    expect(parsed.replyTo).toMatchObject([
      { address: "help@acme.test" },
      { name: "Sales, EU", address: "sales@acme.test" },
      { name: "Zoë", address: "zoe@acme.test" },
    ]);
  });

  it("sends a single HTML part when there is no text", async () => {
    const raw = buildMime(mail({ text: "" })).toString();
    expect(raw).toMatch(/^Content-Type: text\/html; charset=utf-8$/m);
    expect(raw).not.toMatch(/multipart/);
    expect((await PostalMime.parse(raw)).html?.trim()).toBe("<p>Hello</p>");
  });

  it("keeps plain ASCII as 7bit with CRLF lines and base64-encodes anything else", () => {
    expect(bodyPart("a\nb")).toEqual({ cte: "7bit", body: Buffer.from("a\r\nb") });
    expect(bodyPart("x".repeat(1200)).cte).toBe("base64");
    const b = bodyPart("é".repeat(100));
    expect(b.cte).toBe("base64");
    for (const line of b.body.toString().split("\r\n")) expect(line.length).toBeLessThanOrEqual(76);
    expect(Buffer.from(b.body.toString().replace(/\r\n/g, ""), "base64").toString()).toBe("é".repeat(100));
  });

  it("formats and parses addresses safely", () => {
    expect(formatAddress("", "a@b.test")).toBe("a@b.test");
    expect(formatAddress("Ann Lee", "a@b.test")).toBe("Ann Lee <a@b.test>");
    expect(formatAddress('Lee, "Ann"', "a@b.test")).toBe('"Lee, \\"Ann\\"" <a@b.test>');
    expect(formatAddress("Zoë", "a@b.test")).toMatch(/^=\?UTF-8\?Q\?Zo=C3=AB\?= <a@b\.test>$/);
    expect(parseAddress("Ann <a@b.test>")).toEqual({ name: "Ann", address: "a@b.test" });
    expect(parseAddress("a@b.test")).toEqual({ name: "", address: "a@b.test" });
  });
});
