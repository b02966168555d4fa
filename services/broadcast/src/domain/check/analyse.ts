import { Parser } from "htmlparser2";
import { isOwnLinkUrl, LINK_ROUTES } from "@mailroom/content/urls.js";

/**
 * What a pre-send check reads from a rendered message's HTML (DESIGN §10.5), in one pass of
 * htmlparser2: the links a recipient can follow, the images with their alt text, the visible
 * text (to weigh images against words) and whether an unsubscribe link is there.
 */
export interface HtmlFacts {
  /** Unique http(s) link targets, in order of appearance. */
  links: string[];
  images: Array<{ src: string; alt?: string }>;
  /** Visible characters (whitespace collapsed; scripts, styles and the head left out). */
  textChars: number;
  /** An anchor to the message's own unsubscribe URL, or one whose text says unsubscribe. */
  unsubscribeLink: boolean;
}

/** Elements whose content a reader never sees. */
const HIDDEN = new Set(["head", "script", "style", "title", "template"]);
/** Anchor texts that offer to unsubscribe (any language the footer might be written in is welcome here). */
const UNSUBSCRIBE_TEXT = /unsubscribe|opt[\s-]?out|désinscri|desinscri|abmelden|darse de baja|manage (your )?(email )?preferences/i;

export function analyseHtml(html: string, unsubscribeUrl = ""): HtmlFacts {
  const links: string[] = [];
  const seen = new Set<string>();
  const images: HtmlFacts["images"] = [];
  let hiddenDepth = 0;
  let textChars = 0;
  let lastWasSpace = true;
  let unsubscribeLink = false;
  // The anchor being read: its href, and its text so far.
  let anchor: { href: string; text: string } | undefined;
  // Mailroom's own pages (the unsubscribe and manage links, tracking) are not the author's links to check.
  const unsubscribePrefix = LINK_ROUTES.unsubscribe.slice(0, LINK_ROUTES.unsubscribe.indexOf(":"));
  const publicUrl = unsubscribeUrl.includes(unsubscribePrefix) ? unsubscribeUrl.slice(0, unsubscribeUrl.lastIndexOf(unsubscribePrefix)) : "";
  const own = (href: string) => href === unsubscribeUrl || (publicUrl !== "" && isOwnLinkUrl(href, publicUrl));

  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (HIDDEN.has(name)) hiddenDepth++;
        if (name === "img") {
          const src = (attrs.src ?? "").trim();
          images.push(attrs.alt === undefined ? { src } : { src, alt: attrs.alt });
        }
        if (name === "a" || name === "area") {
          const href = (attrs.href ?? "").trim();
          if (name === "a") anchor = { href, text: "" };
          if (unsubscribeUrl && href === unsubscribeUrl) unsubscribeLink = true;
          if (/^https?:\/\//i.test(href) && !own(href) && !seen.has(href)) {
            seen.add(href);
            links.push(href);
          }
        }
      },
      ontext(data) {
        if (hiddenDepth > 0) return;
        if (anchor) anchor.text += data;
        for (const ch of data) {
          const space = /\s/.test(ch);
          if (space && lastWasSpace) continue;
          textChars++;
          lastWasSpace = space;
        }
      },
      onclosetag(name) {
        if (HIDDEN.has(name)) hiddenDepth = Math.max(0, hiddenDepth - 1);
        if (name === "a" && anchor) {
          if (UNSUBSCRIBE_TEXT.test(anchor.text) && anchor.href && anchor.href !== "#") unsubscribeLink = true;
          anchor = undefined;
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.end(html);
  return { links, images, textChars, unsubscribeLink };
}
