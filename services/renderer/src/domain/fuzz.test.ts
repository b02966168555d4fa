import { describe, expect, it } from "vitest";
import { ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { mergeMessage } from "@mailroom/content/merge.js";
import { compile, CTX, RECIPIENT, SECRET } from "../testing.js";
import { verifyClick } from "@mailroom/content/tokens.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";

/** mulberry32: small seeded PRNG so every run feeds the same junk. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HOSTILE = [
  "<a", "<A ", " href=", " HREF=", "<area ", "<v:roundrect ", "=", '"', "'", ">", "/>", "</a>", "<body>", "</body>",
  "<html>", "</html>", "<head>", "</head>", "<!doctype html>", "<!--", "-->", "<!--[if mso]>", "<![endif]-->",
  "<script>", "</script>", "<style>", "<title>", "<textarea>", "<![CDATA[", "]]>", "<?xml ?>", "&amp;", "&#x",
  "&#0;", "&", ";", "{{", "}}", "{{firstName}}", "{{ unsubscribeUrl }}", "{{{{x}}}}", "{{ constructor }}",
  "https://a.test/p?q=1&r=2#f", "http://", "mailto:x@y", "tel:1", "#top", "/rel", "javascript:alert(1)",
  " jav\tascript:", "data:text/html,", "\u0000", "\uFFFD", "\uD800", "\uDC00", "😀", "\r\n", " ", "\t", "<div>",
  "<p>", "<table><tr><td>", "<", "</", "xyz",
];
const SAFE = ["<a ", " href=", "<area ", '"', "'", ">", "</a>", "<p>", "</p>", "<body>", "</body>", "<!--", "-->",
  "https://a.test/x?y=1#z", "/rel", "mailto:a@b", "#x", "text", " ", "&amp;", "<", "\n", "<div class=x>"];

function junk(random: () => number, vocabulary: string[], pieces: number): string {
  let out = "";
  for (let i = 0; i < pieces; i++) {
    const r = random();
    if (r < 0.8) out += vocabulary[Math.floor(random() * vocabulary.length)];
    else out += String.fromCharCode(Math.floor(random() * 0x3000));
  }
  return out;
}

describe("fuzz: generated junk never crashes or hangs the renderer", () => {
  it("compiles and merges 250 hostile documents, every tracked link verifiable", () => {
    const random = prng(0xc0ffee);
    const started = performance.now();
    for (let i = 0; i < 250; i++) {
      const html = junk(random, HOSTILE, 1 + Math.floor(random() * 400));
      const options = {
        html,
        subject: junk(random, HOSTILE, 5),
        previewText: random() < 0.5 ? junk(random, HOSTILE, 5) : "",
        trackClicks: random() < 0.8,
        trackOpens: random() < 0.5,
        kind: random() < 0.5 ? ContentKind.BROADCAST : ContentKind.TRANSACTIONAL,
      };
      let compiled;
      let merged;
      try {
        compiled = compile(options);
        merged = mergeMessage(compiled, RECIPIENT, CTX);
      } catch (err) {
        // A broadcast is Liquid (DESIGN §10.2): junk that does not parse is a clean 400, never a crash.
        expect(options.kind).toBe(ContentKind.BROADCAST);
        expect(errorInfoOf(err)?.code).toBe("invalid_template");
        continue;
      }
      expect(typeof merged.html).toBe("string");
      expect(typeof merged.text).toBe("string");
      for (const m of merged.html.matchAll(/\/t\/c\/([\w.-]+)\/([\w.-]+)/g)) {
        const click = verifyClick(SECRET, m[1], m[2]);
        expect(click?.link.url).toMatch(/^https?:\/\//i);
      }
      if (options.kind === ContentKind.BROADCAST) expect(merged.html + merged.text).toContain(merged.unsubscribeUrl);
    }
    expect(performance.now() - started).toBeLessThan(15_000);
  });

  it("changes nothing in junk without variables or tracking", () => {
    const random = prng(42);
    for (let i = 0; i < 200; i++) {
      const html = junk(random, SAFE, 1 + Math.floor(random() * 200));
      const merged = mergeMessage(compile({ html, trackClicks: false }), RECIPIENT, CTX);
      expect(merged.html).toBe(html);
    }
  });

  it("with tracking on, changes nothing but rewritten href values", () => {
    const random = prng(7);
    // No line breaks here: a browser drops them from a URL, and so does the tracked target.
    const vocabulary = SAFE.filter((s) => s !== "\n");
    for (let i = 0; i < 200; i++) {
      const html = junk(random, vocabulary, 1 + Math.floor(random() * 200)).replace(/[\r\n\t]/g, " ");
      const compiled = compile({ html });
      const merged = mergeMessage(compiled, RECIPIENT, CTX);
      // Put each click URL back to its source text: the original must come out.
      let index = 0;
      const restored = merged.html.replace(/https:\/\/mail\.example\.test\/t\/c\/[\w.-]+\/[\w.-]+/g, () => {
        const url = compiled.links[index++].url;
        return url.replace(/&/g, "&amp;");
      });
      expect(index).toBe(compiled.links.length);
      expect(restored).toBe(html);
    }
  });
});

describe("large hostile documents", () => {
  /** Any error fails the test: only a compiled result counts (these inputs are all within limits). */
  const timed = (html: string) => {
    const started = performance.now();
    const compiled = compile({ html, previewText: "p", trackOpens: true, kind: ContentKind.BROADCAST });
    const merged = mergeMessage(compiled, RECIPIENT, CTX);
    return { ms: performance.now() - started, compiled, merged };
  };
  /** Broadcast HTML is Liquid: braces that are no Liquid are refused (400 invalid_template), in bounded time. */
  const refusedInTime = (html: string) => {
    const started = performance.now();
    let err: unknown;
    try {
      compile({ html, previewText: "p", trackOpens: true, kind: ContentKind.BROADCAST });
    } catch (e) {
      err = e;
    }
    expect(errorInfoOf(err)?.code).toBe("invalid_template");
    expect(performance.now() - started).toBeLessThan(10_000);
  };
  const KB = 1024;

  it.each([
    ["a 480 KB attribute", `<a href="https://x.test/${"a".repeat(480 * KB)}">x</a>`],
    ["an unterminated attribute quote", `<a href="https://x.test/${"b".repeat(400 * KB)}`],
    ["12k links", '<a href="https://x.test/?i=1">l</a>'.repeat(12_000)],
    ["100k unclosed <b>", "<b>".repeat(160_000)],
    ["unclosed comment", "<!--" + "<a href='https://x.test'>".repeat(18_000)],
    ["entity soup", "&#x41;&amp;&#9999999999;&;".repeat(18_000)],
    ["100k variables", "{{a}}".repeat(100_000)],
    ["85k variables between text", "{{a}}x".repeat(85_000)],
  ])("%s: a result in bounded time", (_name, html) => {
    expect(Buffer.byteLength(html)).toBeLessThanOrEqual(500 * KB);
    const result = timed(html);
    expect(result.merged.html.length).toBeGreaterThan(0);
    expect(result.ms).toBeLessThan(10_000);
  });

  it("nested braces: refused in bounded time", () => refusedInTime("{{".repeat(120_000) + "x" + "}}".repeat(120_000)));

  it("a URL too long for a token stays untracked instead of breaking", () => {
    const result = timed(`<a href="https://x.test/${"a".repeat(10 * KB)}">x</a>`);
    expect(result.compiled.links).toHaveLength(0);
  });
});
