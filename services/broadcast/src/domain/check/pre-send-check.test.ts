import { describe, expect, it } from "vitest";
import { ManualClock, silentLogger } from "@mailroom/kit/testing.js";
import { analyseHtml } from "./analyse.js";
import { PreSendCheck, type CheckContent } from "./pre-send-check.js";
import type { LinkResult, SpamResult } from "./ports.js";

const content = (over: Partial<CheckContent> = {}): CheckContent => ({
  subject: "Autumn at Acme",
  html: `<p>${"Plenty of words about the autumn at Acme. ".repeat(8)}</p><p><a href="https://acme.test/u/T">Unsubscribe</a></p>`,
  text: "Plenty of words.",
  previewText: "Three new things",
  from: { email: "news@acme.test", name: "Acme" },
  replyTo: [],
  to: "ann@example.test",
  messageId: "<check.1@acme.test>",
  unsubscribeUrl: "https://acme.test/u/T",
  unsubscribeRequired: true,
  textGiven: true,
  ...over,
});

function checker(spam: SpamResult = { scored: false, skipped: "off" }, links: (urls: string[]) => LinkResult[] = (urls) => urls.map((url) => ({ url, status: 200, redirects: [], finalUrl: url }))) {
  const asked: string[][] = [];
  const check = new PreSendCheck({
    broadcasts: { get: async () => { throw new Error("unused"); }, preview: async () => { throw new Error("unused"); } },
    directory: { subscribedContacts: async function* () {} },
    links: { check: async (urls) => (asked.push(urls), links(urls)) },
    spam: { score: async () => spam },
    clock: new ManualClock(),
    logger: silentLogger,
  });
  return { check, asked };
}
const codes = (r: { warnings: Array<{ code: string }>; errors: Array<{ code: string }> }) => [...r.errors, ...r.warnings].map((f) => f.code).sort();

describe("the pre-send check's findings", () => {
  it("finds nothing in a clean message", async () => {
    const result = await checker().check.check(content());
    expect(codes(result)).toEqual([]);
    expect(result.unsubscribe).toEqual({ required: true, found: true });
  });

  it("weighs subject, preview text, text part and images against the words", async () => {
    const result = await checker().check.check(content({
      subject: "x".repeat(71),
      previewText: "p".repeat(141),
      text: "  ",
      html: '<p>Sale!</p><img src="a.png"><img src="b.png" alt=""><a href="https://acme.test/u/T">Unsubscribe</a>',
    }));
    expect(codes(result)).toEqual(["image_heavy", "image_missing_alt", "preview_text_long", "subject_long", "text_missing"]);
    expect(result.warnings.find((f) => f.code === "image_missing_alt")?.where).toBe("a.png");
    expect(result.images).toEqual([{ src: "a.png" }, { src: "b.png", alt: "" }]);
    expect(codes(await checker().check.check(content({ subject: "  " })))).toEqual(["subject_missing"]);
  });

  it("calls a 4xx or 5xx link an error, no answer or a refusal a warning; a transactional message needs no unsubscribe link", async () => {
    const answers: Record<string, Partial<LinkResult>> = {
      "https://a.test/gone": { status: 410 },
      "https://a.test/down": { status: 0, error: "connection failed: ECONNREFUSED" },
      "http://10.0.0.1/x": { status: 0, refused: true, error: "refused: 10.0.0.1 is a private address" },
    };
    const { check, asked } = checker(undefined, (urls) => urls.map((url) => ({ url, redirects: [], finalUrl: url, status: 200, ...answers[url] })));
    const html = Object.keys(answers).map((u) => `<a href="${u}">link</a> <a href="${u}">again</a>`).join("") + `<a href="mailto:x@a.test">mail</a> <a href="#top">top</a> ${"words ".repeat(50)}`;
    const result = await check.check(content({ html, unsubscribeRequired: false, unsubscribeUrl: "" }));
    expect(asked).toEqual([Object.keys(answers)]);
    expect(result.errors.map((f) => `${f.code} ${f.where}`)).toEqual(["link_broken https://a.test/gone"]);
    expect(result.warnings.map((f) => `${f.code} ${f.where}`)).toEqual(["link_unreachable https://a.test/down", "link_refused http://10.0.0.1/x"]);
    expect(result.unsubscribe).toEqual({ required: false, found: false });
    expect(codes(await checker().check.check(content({ html: `<p>${"words ".repeat(50)}</p>` })))).toEqual(["unsubscribe_missing"]);
  });

  it("turns a spam score into a warning from half the threshold and an error from the threshold", async () => {
    const scored = (score: number): SpamResult => ({ scored: true, score, required: 5, rules: [{ name: "SOME_RULE", score, description: "d" }] });
    expect(codes(await checker(scored(2.4)).check.check(content()))).toEqual([]);
    expect(codes(await checker(scored(2.5)).check.check(content()))).toEqual(["spam_score"]);
    const high = await checker(scored(6.1)).check.check(content());
    expect(high.errors).toEqual([{ level: "error", code: "spam_score_high", where: "spam", message: expect.stringContaining("SOME_RULE 6.1") }]);
    expect(codes(await checker({ scored: false, failed: true, skipped: "spamd did not answer" }).check.check(content()))).toEqual(["spam_check_failed"]);
  });

  it("warns about links the check had no time for", async () => {
    const { check } = checker(undefined, (urls) => urls.map((url, i) => ({ url, status: i === 0 ? 200 : 0, redirects: [], finalUrl: url, ...(i === 0 ? {} : { unchecked: true, error: "not checked" }) })));
    const result = await check.check(content({ html: `${content().html}<a href="https://a.test/1">1</a><a href="https://a.test/2">2</a><a href="https://a.test/3">3</a>` }));
    expect(result.warnings).toEqual([expect.objectContaining({ code: "links_not_checked", where: "html", message: expect.stringMatching(/^2 links were not checked/) })]);
    expect(result.errors).toEqual([]);
  });

  it("clips over 102 KB", async () => {
    const result = await checker().check.check(content({ html: `${content().html}<p>${"x".repeat(102 * 1024)}</p>` }));
    expect(result.size.clipped).toBe(true);
    expect(result.warnings.map((f) => `${f.code} ${f.where}`)).toEqual(["html_clipped html"]);
  });
});

describe("analyseHtml", () => {
  it("reads links, images, visible text and the unsubscribe link; Mailroom's own pages are not the author's links", () => {
    const facts = analyseHtml(
      '<html><head><title>Hidden</title><style>p{}</style></head><body><p>Hello   <b>there</b></p>' +
      '<a href="https://m.test/u/TOKEN?manage=1">Preferences</a><a href="https://m.test/t/c/L/TOKEN">tracked</a>' +
      '<a href="https://acme.test/a">A</a><a href="https://acme.test/a">A again</a><area href="https://acme.test/b">' +
      '<img src="x.png" alt="X"><a href="https://m.test/u/TOKEN">Leave</a></body></html>',
      "https://m.test/u/TOKEN",
    );
    expect(facts.links).toEqual(["https://acme.test/a", "https://acme.test/b"]);
    expect(facts.images).toEqual([{ src: "x.png", alt: "X" }]);
    expect(facts.unsubscribeLink).toBe(true);
    expect(facts.textChars).toBe("Hello there".length + "PreferencestrackedAA againLeave".length);
    expect(analyseHtml('<a href="https://acme.test/bye">Unsubscribe from this list</a>').unsubscribeLink).toBe(true);
    expect(analyseHtml('<a href="#">Unsubscribe</a><p>unsubscribe</p>').unsubscribeLink).toBe(false);
  });
});
