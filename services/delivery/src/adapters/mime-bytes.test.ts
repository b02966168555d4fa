import { describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { wireBody } from "@mailroom/content/merge.js";
import { base64Lines, bodyPart, buildMime } from "./mime.js";
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

/** The boundary differs per message (a counter): compare with it blanked. */
const withoutBoundary = (raw: Buffer) => raw.toString("latin1").replace(/=_mr_[0-9a-z_]+/g, "=_mr_X");

describe("buildMime with bodies merged to bytes", () => {
  const date = new Date("2030-01-02T03:04:05Z");
  const cases: Array<[string, string, string]> = [
    ["ASCII, LF lines", "<p>Hi Ann</p>\n<p>bye</p>\n", "Hi Ann\nbye\n"],
    ["non-ASCII", "<p>Zoë ❤ 😀</p>", "Zoë ❤\r\nline two"],
    ["long line", `<p>${"x".repeat(1500)}</p>`, "short"],
    ["lone CRs", "a\rb\r\nc", "\r"],
  ];
  for (const [name, html, text] of cases) {
    it(`builds the same message from bytes as from strings: ${name}`, async () => {
      const fromStrings = buildMime(mail({ html, text }), date);
      const fromBytes = buildMime(mail({ html: wireBody(html), text: wireBody(text) }), date);
      expect(withoutBoundary(fromBytes)).toBe(withoutBoundary(fromStrings));
      const parsed = await PostalMime.parse(fromBytes);
      // The parser hands 7bit parts back with LF lines (and the delimiter's line break): compare the lines.
      const lines = (s: string) => s.replace(/\r\n|\r|\n/g, "\n").trimEnd();
      expect(lines(parsed.html ?? "")).toBe(lines(html));
    });
  }

  it("sends a 7bit body's bytes as they are and base64-encodes the others from the bytes", () => {
    const seven = wireBody("a\r\nb");
    expect(bodyPart(seven)).toEqual({ cte: "7bit", body: seven.bytes });
    const eight = { bytes: Buffer.from("Zoë\r\n".repeat(100)), sevenBit: false };
    const part = bodyPart(eight);
    expect(part.cte).toBe("base64");
    expect(Buffer.from(part.body.toString("latin1").replace(/\r\n/g, ""), "base64").equals(eight.bytes)).toBe(true);
  });

  it("leaves the text/plain part out when the merged text is empty bytes", () => {
    const raw = buildMime(mail({ html: wireBody("<p>Hi</p>"), text: wireBody("") })).toString();
    expect(raw).not.toMatch(/multipart/);
    expect(raw).toMatch(/^Content-Type: text\/html; charset=utf-8$/m);
  });
});

describe("base64Lines", () => {
  it("equals Buffer base64 in 76-character CRLF lines at every size around line and chunk edges", () => {
    for (const n of [0, 1, 2, 3, 56, 57, 58, 114, 1000, 1823, 1824, 1825, 3648, 3649, 100_001, 100_002]) {
      const src = Buffer.from(Array.from({ length: n }, (_, k) => (k * 37 + 11) & 255));
      const b64 = src.toString("base64");
      const expected = (b64.match(/.{1,76}/g) ?? []).join("\r\n");
      expect(base64Lines(src).toString("latin1"), `size ${n}`).toBe(expected);
    }
  });
});
