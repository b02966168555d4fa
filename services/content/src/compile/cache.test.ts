import { describe, expect, it } from "vitest";
import { parseClickToken } from "../tokens.js";
import { CompileCache } from "./cache.js";
import { compileMessage, type CompileInput } from "./compile.js";
import { ContentKind } from "./compiled.js";

const SECRET = "cache-test-secret-0123456789abcdef";
const opts = { secret: SECRET, publicUrl: "https://mail.example.test" };

const input = (over: Partial<CompileInput> = {}): CompileInput => ({
  html: '<p>Order <a href="https://shop.test/o/1">one</a> and <a href="https://shop.test/o/2">two</a></p>',
  subject: "Your order",
  previewText: "",
  text: "",
  trackClicks: true,
  trackOpens: true,
  kind: ContentKind.TRANSACTIONAL,
  literal: true,
  contentId: "trs_1",
  workspaceId: "ws_a",
  ...over,
});

describe("compile cache", () => {
  it("answers a repeat as a fresh compile would, with link tokens signed for the new content id", () => {
    const cache = new CompileCache(opts);
    cache.compile(input());
    const hit = cache.compile(input({ contentId: "trs_2" }));
    const fresh = compileMessage(input({ contentId: "trs_2" }), opts);
    expect(hit).toEqual(fresh);
    expect(hit.links.map((l) => parseClickToken(SECRET, l.token))).toEqual([
      { contentId: "trs_2", index: 0, url: "https://shop.test/o/1" },
      { contentId: "trs_2", index: 1, url: "https://shop.test/o/2" },
    ]);
  });

  it("never serves one workspace's or one setting's entry for another", () => {
    const cache = new CompileCache(opts);
    cache.compile(input());
    expect(cache.compile(input({ workspaceId: "ws_b", contentId: "trs_3" })).workspaceId).toBe("ws_b");
    expect(cache.compile(input({ trackClicks: false, contentId: "trs_4" })).links).toEqual([]);
    expect(cache.compile(input({ literal: false, html: "<p>Hi {{name}}</p>", contentId: "trs_5" })).variables).toEqual(["name"]);
    expect(cache.compile(input({ literal: true, html: "<p>Hi {{name}}</p>", contentId: "trs_6" })).variables).toEqual([]);
  });

  it("refuses content over the limits before looking it up", () => {
    const cache = new CompileCache(opts);
    expect(() => cache.compile(input({ subject: "x".repeat(2_001) }))).toThrow(/subject is longer/);
  });
});
