import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";
import { describe, expect, it } from "vitest";
import { ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { escapeHtml } from "@mailroom/content/escape.js";
import { mergeMessage, type MergedMessage, type MergeRecipient } from "@mailroom/content/merge.js";
import { verifyClick } from "@mailroom/content/tokens.js";
import { linkBase, linkPrefix } from "@mailroom/content/urls.js";
import { buildNewsletter, VARIABLES } from "../fixtures/newsletter.js";
import { compile, CTX, SECRET } from "../testing.js";
import { variablePattern } from "@mailroom/content/compile/variables.js";

/**
 * What a mail client sees: the merged HTML of real newsletter-like content parsed into a
 * DOM (jsdom, an HTML5 parser as browsers and webmail use), checked against the DOM of
 * the author's input. The compiler may only add the preheader, the footer and the open
 * pixel and rewrite http(s) hrefs to click URLs; everything else must parse the same.
 */
const DIGEST = readFileSync(new URL("../fixtures/digest.html", import.meta.url), "utf8");
const NEWSLETTER = buildNewsletter();
const PREVIEW = "This week in {{city}}";
const CLICK_PREFIX = linkPrefix(linkBase(CTX.publicUrl), "click", { link: "" }).slice(0, -1);

function broadcast(html: string, recipient: MergeRecipient): { merged: MergedMessage; dom: JSDOM } {
  const compiled = compile({ html, previewText: PREVIEW, kind: ContentKind.BROADCAST, trackClicks: true, trackOpens: true });
  const merged = mergeMessage(compiled, recipient, CTX);
  return { merged, dom: new JSDOM(merged.html) };
}

/** Every variable merges to its own `{{name}}` text, so the output reads like the input. */
function identityRecipient(names: readonly string[]): MergeRecipient {
  const variables = Object.fromEntries(names.map((name) => [name, `{{${name}}}`]));
  return { email: "", contactId: "{{contactId}}", messageId: "m1@mail.example.test", variables };
}

const hrefElements = (doc: Document) => [...doc.querySelectorAll("a[href], area[href]")];

/** The original URL behind a click URL, checked against the signature. */
function clickTarget(href: string, recipientToken: string): string | undefined {
  if (!href.startsWith(CLICK_PREFIX)) return undefined;
  const [linkToken, token] = href.slice(CLICK_PREFIX.length).split("/");
  expect(token).toBe(recipientToken);
  return verifyClick(SECRET, linkToken, token)?.link.url;
}

interface Insertions {
  preheader: Element;
  footer?: Element;
  /** The open pixel's nodes: a plain <img>, or Outlook's conditional <img> then the CSS-background div between its comments. */
  pixel: Node[];
}

/** The compiler's insertions, located where they must be: first and last in body. */
function insertions(doc: Document, merged: MergedMessage, withFooter: boolean): Insertions {
  const body = doc.body;
  const preheader = body.firstChild as Element;
  expect(preheader.nodeName).toBe("DIV");
  // Whitespace after </body> belongs to body in an HTML parser; nothing else may follow.
  let last = body.lastChild!;
  while (last.nodeType === last.TEXT_NODE && !last.textContent!.trim()) last = last.previousSibling!;
  const pixelUrl = `${linkPrefix(linkBase(CTX.publicUrl), "open", {})}${merged.recipientToken}`;
  let pixel: Node[];
  if (last.nodeName === "IMG") {
    // A long message, or one with images of its own: a plain 1×1 <img>.
    const img = last as Element;
    expect(img.getAttribute("src")).toBe(pixelUrl);
    expect([img.getAttribute("width"), img.getAttribute("height"), img.getAttribute("alt")]).toEqual(["1", "1", ""]);
    pixel = [img];
  } else {
    // A short message without images: every client but Outlook on Windows gets a div with the
    // pixel as its CSS background.
    const closing = last;
    expect(closing.nodeType).toBe(closing.COMMENT_NODE);
    expect(closing.textContent).toBe("<![endif]");
    const beacon = closing.previousSibling as Element;
    expect(beacon.nodeName).toBe("DIV");
    expect(beacon.getAttribute("style")).toContain(`background-image:url('${pixelUrl}')`);
    expect(beacon.childNodes).toHaveLength(0);
    const opening = beacon.previousSibling!;
    expect(opening.textContent).toBe("[if !mso]><!");
    // Outlook on Windows (reads [if mso], ignores CSS backgrounds): a 1×1 <img>, a comment to everyone else.
    const outlook = opening.previousSibling!;
    expect(outlook.nodeType).toBe(outlook.COMMENT_NODE);
    expect(outlook.textContent).toMatch(new RegExp(`^\\[if mso\\]><img src="${pixelUrl.replace(/[.]/g, "\\.")}" width="1" height="1" `));
    pixel = [outlook, opening, beacon, closing];
  }
  if (!withFooter) return { preheader, pixel };
  const footer = pixel[0].previousSibling as Element;
  expect(footer.nodeName).toBe("DIV");
  return { preheader, footer, pixel };
}

/**
 * The output DOM serialised with the insertions removed, click URLs put back to the URLs
 * they stand for and the unsubscribe/manage URLs back to their variables. Conditional comments (Outlook's
 * VML buttons) are text to the parser: their click URLs are put back as the source
 * wrote them, HTML-escaped.
 */
function withoutInsertions(dom: JSDOM, merged: MergedMessage, found: Insertions): string {
  const doc = dom.window.document;
  for (const node of [found.preheader, found.footer, ...found.pixel]) (node as ChildNode | undefined)?.remove();
  for (const el of hrefElements(doc)) {
    const href = el.getAttribute("href")!;
    const target = clickTarget(href, merged.recipientToken);
    if (target) el.setAttribute("href", target);
    else if (href === merged.unsubscribeUrl) el.setAttribute("href", "{{unsubscribeUrl}}");
    else if (href === merged.manageUrl) el.setAttribute("href", "{{manageUrl}}");
  }
  const walker = doc.createTreeWalker(doc, dom.window.NodeFilter.SHOW_COMMENT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const comment = node as Comment;
    comment.data = comment.data.replace(/https?:\/\/[^"'\s]+/g, (url) => {
      const target = clickTarget(url, merged.recipientToken);
      return target ? escapeHtml(target) : url;
    });
  }
  return dom.serialize();
}

describe("what a mail client sees (jsdom)", () => {
  const digestNames = ["firstName", "plan", "city", "email"];

  it("the hidden preheader comes first in body, holds the preview text, and is hidden", () => {
    const { merged, dom } = broadcast(DIGEST, { email: "ann@example.test", messageId: "m1", variables: { city: "Lyon" } });
    const { preheader } = insertions(dom.window.document, merged, true);
    expect(preheader.textContent).toMatch(/^This week in Lyon/);
    expect(preheader.parentElement).toBe(dom.window.document.body);
    const style = dom.window.getComputedStyle(preheader);
    expect(style.display).toBe("none");
    expect(style.maxHeight).toBe("0px");
    expect(style.opacity).toBe("0");
    expect(style.overflow).toBe("hidden");
    expect(preheader.getAttribute("style")).toContain("mso-hide:all");
    expect(merged.previewText).toBe("This week in Lyon");
  });

  it("adds the unsubscribe footer once, inside body, after all content, linking straight to the unsubscribe pages", () => {
    const { merged, dom } = broadcast(DIGEST, identityRecipient(digestNames));
    const doc = dom.window.document;
    const { footer } = insertions(doc, merged, true);
    expect(footer!.parentElement).toBe(doc.body);
    expect(footer!.compareDocumentPosition(doc.querySelector("center")!) & dom.window.Node.DOCUMENT_POSITION_PRECEDING).toBeTruthy();
    const unsubscribeLinks = hrefElements(doc).filter((a) => a.getAttribute("href") === merged.unsubscribeUrl);
    expect(unsubscribeLinks).toHaveLength(1);
    expect(footer!.contains(unsubscribeLinks[0])).toBe(true);
    expect([...footer!.querySelectorAll("a")].map((a) => a.getAttribute("href"))).toEqual([merged.unsubscribeUrl, merged.manageUrl]);
    expect(doc.body.textContent!.match(/You are receiving this email/g)).toHaveLength(1);
  });

  it("adds no footer to content that has its own unsubscribe link, which goes out untracked", () => {
    const { merged, dom } = broadcast(NEWSLETTER.html, identityRecipient(VARIABLES));
    const doc = dom.window.document;
    insertions(doc, merged, false);
    expect(doc.body.textContent).not.toContain("You are receiving this email");
    expect(hrefElements(doc).filter((a) => a.getAttribute("href") === merged.unsubscribeUrl)).toHaveLength(1);
  });

  for (const [name, html, names, withFooter] of [
    ["the digest fixture", DIGEST, digestNames, true],
    ["the 97 KB generated newsletter", NEWSLETTER.html, VARIABLES, false],
  ] as const) {
    it(`${name}: every http(s) link goes through the click URL; mailto, tel, #, relative and unsubscribe links are untouched`, () => {
      const input = new JSDOM(html).window.document;
      const { merged, dom } = broadcast(html, identityRecipient(names));
      const doc = dom.window.document;
      const found = insertions(doc, merged, withFooter);
      const inserted = found.footer ? [...found.footer.querySelectorAll("a")] : [];
      const before = hrefElements(input);
      const after = hrefElements(doc).filter((el) => !inserted.includes(el as HTMLAnchorElement));
      expect(after).toHaveLength(before.length);
      let tracked = 0;
      before.forEach((el, i) => {
        const original = el.getAttribute("href")!;
        const href = after[i].getAttribute("href")!;
        if (/^https?:\/\//i.test(original)) {
          expect(clickTarget(href, merged.recipientToken)).toBe(original);
          tracked++;
        } else if (original === "{{unsubscribeUrl}}") {
          expect(href).toBe(merged.unsubscribeUrl);
        } else if (original === "{{manageUrl}}") {
          expect(href).toBe(merged.manageUrl);
        } else {
          expect(href).toBe(original);
        }
      });
      expect(tracked).toBeGreaterThan(5);
    });

    it(`${name}: the DOM of the output minus the insertions is the DOM of the input`, () => {
      const { merged, dom } = broadcast(html, identityRecipient(names));
      const found = insertions(dom.window.document, merged, withFooter);
      // The identity merge writes `{{ plan }}` back as `{{plan}}`.
      const input = new JSDOM(html.replace(variablePattern(), "{{$1}}")).serialize();
      const output = withoutInsertions(dom, merged, found);
      // On a difference, show where it starts rather than two 100 KB strings.
      let at = 0;
      while (at < input.length && output[at] === input[at]) at++;
      expect(output.slice(Math.max(0, at - 80), at + 80)).toBe(input.slice(Math.max(0, at - 80), at + 80));
      expect(output).toBe(input);
    });
  }

  it("the VML button in Outlook's conditional comment is tracked too", () => {
    const { merged, dom } = broadcast(DIGEST, identityRecipient(digestNames));
    const doc = dom.window.document;
    const walker = doc.createTreeWalker(doc, dom.window.NodeFilter.SHOW_COMMENT);
    const vml: string[] = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if ((node as Comment).data.includes("v:roundrect")) vml.push((node as Comment).data);
    }
    expect(vml).toHaveLength(1);
    const href = vml[0].match(/href="([^"]+)"/)![1];
    expect(clickTarget(href, merged.recipientToken)).toBe("https://events.acme.example/summit?ref=digest&seat=1");
  });

  it("contact data shows as text, never as markup", () => {
    const values = { firstName: '<img src=x onerror="alert(1)">', plan: "Pro & <b>Max</b>", city: "Lyon" };
    const { dom } = broadcast(DIGEST, { email: "ann@example.test", messageId: "m1", variables: values });
    const doc = dom.window.document;
    expect(doc.querySelector("h1")!.textContent).toBe(`Hello ${values.firstName}, here is your ${values.plan} digest`);
    expect(doc.querySelectorAll("img[onerror]")).toHaveLength(0);
    expect(doc.querySelectorAll("b")).toHaveLength(new JSDOM(DIGEST).window.document.querySelectorAll("b").length);
  });
});
