import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { CompiledMessageSchema, ContentKind, type CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { mergeMessage, mergeMessageBytes, prepare, wireBody, type MergeRecipient } from "@mailroom/content/merge.js";
import { compile, CTX, RECIPIENT } from "../testing.js";

/** What the byte merge must equal: the string merge, CRLF-normalised, UTF-8. */
const wire = (s: string) => Buffer.from(s.replace(/\r\n|\r|\n/g, "\r\n"), "utf8");

/** The 7bit rule on the expected bytes: ASCII only, no line over 998 octets. */
function sevenBitOf(bytes: Buffer): boolean {
  if (bytes.some((b) => b > 0x7f)) return false;
  return bytes.toString("latin1").split("\r\n").every((line) => line.length <= 998);
}

function expectSameAsStringMerge(compiled: CompiledMessage, recipient: MergeRecipient, ctx = CTX) {
  const s = mergeMessage(compiled, recipient, ctx);
  const b = mergeMessageBytes(compiled, recipient, ctx);
  expect(b.html.bytes.equals(wire(s.html)), `html of ${JSON.stringify(s.html.slice(0, 200))}`).toBe(true);
  expect(b.text.bytes.equals(wire(s.text)), `text of ${JSON.stringify(s.text.slice(0, 200))}`).toBe(true);
  expect(b.html.sevenBit).toBe(sevenBitOf(b.html.bytes));
  expect(b.text.sevenBit).toBe(sevenBitOf(b.text.bytes));
  expect({ ...b, html: undefined, text: undefined }).toEqual({ ...s, html: undefined, text: undefined });
  return b;
}

describe("mergeBytes", () => {
  it("equals the string merge: HTML escaping, tracked links, open pixel, footer, generated text", () => {
    const compiled = compile({
      html: '<p title="{{firstName}}">Hi {{firstName}}\n{{lastName}}</p><a href="https://acme.test/a?x=1">A</a><area HREF="https://acme.test/b">',
      trackOpens: true,
      kind: ContentKind.BROADCAST,
    });
    const b = expectSameAsStringMerge(compiled, { ...RECIPIENT, variables: { firstName: `<b>"Tom" & 'Jerry'</b>`, lastName: "O'Neil" } });
    expect(b.html.bytes.toString()).toContain("&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;");
    expect(b.html.bytes.toString()).toContain("Hi &lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;\r\n");
  });

  it("equals the string merge for non-ASCII values and literals (no longer 7bit)", () => {
    const compiled = compile({ html: "<p>{{firstName}} {{lastName}}</p>", text: "Grüße {{firstName}}\n" });
    const b = expectSameAsStringMerge(compiled, { ...RECIPIENT, variables: { firstName: "Zoë ❤ 😀", lastName: "Ünïcode" } });
    expect(b.html.sevenBit).toBe(false);
    expect(b.text.sevenBit).toBe(false);
    expect(b.html.bytes.toString("utf8")).toBe("<p>Zoë ❤ 😀 Ünïcode</p>");
    // ASCII values in an ASCII template stay 7bit; a non-ASCII literal alone makes the text base64.
    const ascii = expectSameAsStringMerge(compiled, RECIPIENT);
    expect(ascii.html.sevenBit).toBe(true);
    expect(ascii.text.sevenBit).toBe(false);
  });

  it("equals the string merge for variables in URLs (percent-encoded, then escaped in HTML)", () => {
    const compiled = compile({
      html: '<a href="https://acme.test/p?e={{email}}&amp;n={{firstName}}#{{lastName}}">x</a><a href="{{unsubscribeUrl}}">u</a>',
      text: "Open https://acme.test/p?e={{email}} or {{manageUrl}}",
    });
    const b = expectSameAsStringMerge(compiled, { ...RECIPIENT, email: "a+b@x.test", variables: { firstName: "Zoë & <Co>", lastName: "a b" } });
    expect(b.html.bytes.toString()).toContain("e=a%2Bb%40x.test&amp;n=Zo%C3%AB%20%26%20%3CCo%3E#a%20b");
    expect(b.html.sevenBit).toBe(true);
  });

  it("equals the string merge for empty values, an empty text and a body without variables", () => {
    const compiled = compile({ html: "{{firstName}}{{lastName}}", text: "" });
    const b = expectSameAsStringMerge(compiled, { ...RECIPIENT, variables: {} });
    expect(b.html.bytes.length).toBe(0);
    expect(b.html.sevenBit).toBe(true);
    const plain = compile({ html: "<p>static</p>", text: "static\n", trackClicks: false });
    const p = expectSameAsStringMerge(plain, RECIPIENT);
    expect(p.text.bytes.toString()).toBe("static\r\n");
    expectSameAsStringMerge(create(CompiledMessageSchema, {}), RECIPIENT);
  });

  it("decides base64 when a line, in a literal or across literal and values, exceeds 998 octets", () => {
    const longLiteral = compile({ html: `<p>${"x".repeat(1200)}</p>\n{{firstName}}`, trackClicks: false });
    expect(expectSameAsStringMerge(longLiteral, RECIPIENT).html.sevenBit).toBe(false);
    // 990 + the value: 7bit for a short value, base64 once the line passes 998.
    const edge = compile({ html: `a\n${"y".repeat(990)}{{firstName}}\nb`, trackClicks: false });
    expect(expectSameAsStringMerge(edge, { ...RECIPIENT, variables: { firstName: "12345678" } }).html.sevenBit).toBe(true);
    expect(expectSameAsStringMerge(edge, { ...RECIPIENT, variables: { firstName: "123456789" } }).html.sevenBit).toBe(false);
    // A line break inside the value ends the long line.
    expect(expectSameAsStringMerge(edge, { ...RECIPIENT, variables: { firstName: "1234\n56789" } }).html.sevenBit).toBe(true);
    // A long value alone.
    expect(expectSameAsStringMerge(edge, { ...RECIPIENT, variables: { firstName: `\n${"z".repeat(999)}\n` } }).html.sevenBit).toBe(false);
  });

  it("normalises line breaks in values and across boundaries (CR in a literal, LF in the value) as the whole text would be", () => {
    const compiled = compile({ html: "<p>x</p>", text: "line\r{{firstName}}\r\n{{lastName}}\r", trackClicks: false });
    for (const firstName of ["\n", "\nA", "\r", "\r\n", "A\r", "\n\n", ""]) {
      for (const lastName of ["\n", "B\r", "\r\n\r", ""]) {
        expectSameAsStringMerge(compiled, { ...RECIPIENT, variables: { firstName, lastName } });
      }
    }
  });

  it("equals the string merge for generated templates and values (property test)", () => {
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const alphabet = ["a", "b", " ", "\r", "\n", "\r\n", "&", "<", "é", "😀", "x".repeat(400), "y".repeat(997)];
    const textOf = (max: number) => Array.from({ length: rand(max) }, () => alphabet[rand(alphabet.length)]).join("");
    const names = ["firstName", "lastName", "plan", "email", "unsubscribeUrl"];
    for (let round = 0; round < 300; round++) {
      const segments = Array.from({ length: 1 + rand(8) }, () => {
        const r = rand(3);
        if (r === 0) return { part: { case: "literal" as const, value: textOf(6) } };
        if (r === 1) return { part: { case: "variable" as const, value: names[rand(names.length)] } };
        return { part: { case: "urlVariable" as const, value: names[rand(names.length)] } };
      });
      const compiled = create(CompiledMessageSchema, {
        html: { segments },
        text: { segments: [...segments].reverse() },
        workspaceId: "ws_test",
        contentId: "cmp_test",
      });
      expectSameAsStringMerge(compiled, { ...RECIPIENT, variables: { firstName: textOf(4), lastName: textOf(3), plan: textOf(2) } });
    }
  });

  it("follows the public URL the context gives, per call", () => {
    const compiled = compile({ html: '<a href="https://acme.test/a">A</a>', trackOpens: true });
    const a = expectSameAsStringMerge(compiled, RECIPIENT, CTX);
    const b = expectSameAsStringMerge(compiled, RECIPIENT, { ...CTX, publicUrl: "https://other.test/" });
    expect(a.html.bytes.toString()).toContain(`${CTX.publicUrl}/t/c/`);
    expect(b.html.bytes.toString()).toContain("https://other.test/t/c/");
    expect(prepare(compiled).mergeBytes(RECIPIENT, CTX).html.bytes.equals(a.html.bytes)).toBe(true);
  });
});

describe("wireBody", () => {
  it("applies the same CRLF and 7bit rules to a plain string", () => {
    expect(wireBody("a\nb\rc\r\nd")).toEqual({ bytes: Buffer.from("a\r\nb\r\nc\r\nd"), sevenBit: true });
    expect(wireBody("x".repeat(998)).sevenBit).toBe(true);
    expect(wireBody("x".repeat(999)).sevenBit).toBe(false);
    expect(wireBody(`a\n${"x".repeat(999)}\nb`).sevenBit).toBe(false);
    expect(wireBody(`${"x".repeat(999)}\nb`).sevenBit).toBe(false);
    expect(wireBody(`b\n${"x".repeat(999)}`).sevenBit).toBe(false);
    expect(wireBody("Zoë")).toEqual({ bytes: Buffer.from("Zoë"), sevenBit: false });
    expect(wireBody("")).toEqual({ bytes: Buffer.alloc(0), sevenBit: true });
  });
});
