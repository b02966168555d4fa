import { describe, expect, it } from "vitest";
import { htmlToPlainText, simpleText, TEXT_LIMITS } from "@mailroom/content/compile/text.js";
import { compile } from "../testing.js";

describe("text generation", () => {
  it("keeps heading case, skips images, shows links and hides #anchors", () => {
    const html = '<h1>Hi {{firstName}}</h1><img src="a.png" alt="Logo"><p><a href="#top">top</a> <a href="https://x.test">x</a></p>';
    expect(htmlToPlainText(html, { tagCount: 5, maxDepth: 2 })).toBe("Hi {{firstName}}\n\ntop x [https://x.test]");
  });

  it("falls back to a linear converter for deep or tag-dense input", () => {
    const html = "<div>".repeat(TEXT_LIMITS.maxDepth + 10) + 'Hi <a href="https://x.test">x</a> &amp; bye';
    expect(htmlToPlainText(html, { tagCount: TEXT_LIMITS.maxDepth + 11, maxDepth: TEXT_LIMITS.maxDepth + 10 })).toBe("Hi x [https://x.test] & bye");
  });

  it("fallback converter skips head/script/style and breaks lines at blocks", () => {
    expect(simpleText("<head><title>T</title><style>a{}</style></head><p>One</p><p>Two<br>Three</p><script>x</script><ul><li>A<li>B</ul>")).toBe(
      "One\n\nTwo\nThree\n\nA\nB",
    );
  });

  it("compiles 100k unclosed nested elements in bounded time", () => {
    const html = "<div>".repeat(100_000);
    const started = performance.now();
    const compiled = compile({ html, previewText: "p" });
    expect(compiled.textGenerated).toBe(true);
    expect(performance.now() - started).toBeLessThan(3_000);
  });
});
