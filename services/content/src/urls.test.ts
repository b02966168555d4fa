import { describe, expect, it } from "vitest";
import { isOwnLinkUrl, LINK_ROUTES, linkPath, linkPrefix, manageUrl, unsubscribeUrl } from "./urls.js";

describe("link URL shapes", () => {
  it("end with the recipient token, which merges append to a per-message prefix", () => {
    for (const shape of Object.values(LINK_ROUTES)) expect(shape.endsWith("/:token")).toBe(true);
    expect(linkPrefix("https://m.test", "click", { link: "LT" }) + "RT").toBe("https://m.test" + linkPath("click", { link: "LT", token: "RT" }));
  });

  it("fill in the gateway's route parameters", () => {
    expect(linkPath("open", { token: "RT" })).toBe("/t/o/RT");
    expect(linkPath("click", { link: "LT", token: "RT" })).toBe("/t/c/LT/RT");
    expect(manageUrl(unsubscribeUrl("https://m.test", "RT"))).toBe("https://m.test/u/RT?manage=1");
  });

  it("recognise our own pages under the public URL only", () => {
    expect(isOwnLinkUrl("HTTPS://M.test/u/abc", "https://m.test/")).toBe(true);
    expect(isOwnLinkUrl("https://m.test/t/c/a/b", "https://m.test")).toBe(true);
    expect(isOwnLinkUrl("https://m.test/team", "https://m.test")).toBe(false);
    expect(isOwnLinkUrl("https://other.test/u/abc", "https://m.test")).toBe(false);
  });
});
