import type { Piece } from "./pieces.js";
import { escapeHtml } from "../escape.js";
import { splitVariables } from "./variables.js";

/**
 * The markup the compiler adds: hidden preheader, unsubscribe footer, open pixel.
 * Inline styles only, as mail clients drop <style> blocks unpredictably.
 */

const PREHEADER_OPEN =
  '<div style="display:none;font-size:1px;line-height:1px;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all;">';
/** Invisible filler so the inbox preview shows the preview text, not the body after it. */
const PREHEADER_FILLER = "&#847;&zwnj;&nbsp;".repeat(40);

/** `literal`: the preview text is sent as given (`{{…}}` is text). */
export function preheaderPieces(previewText: string, literal = false, only?: ReadonlySet<string>, escape: (text: string) => string = escapeHtml): Piece[] {
  const pieces: Piece[] = [{ lit: PREHEADER_OPEN }];
  for (const p of literal ? [{ literal: previewText }] : splitVariables(previewText, only)) {
    pieces.push("literal" in p ? { lit: escape(p.literal) } : { variable: p.variable });
  }
  pieces.push({ lit: `${PREHEADER_FILLER}</div>` });
  return pieces;
}

const LINK_STYLE = "color:#6b7280;text-decoration:underline;";

export function footerPieces(): Piece[] {
  return [
    {
      lit:
        '<div style="margin:24px auto 0;padding:16px;max-width:600px;font-family:Arial,Helvetica,sans-serif;' +
        'font-size:12px;line-height:18px;color:#6b7280;text-align:center;">' +
        "You are receiving this email because you subscribed to our updates.<br>" +
        `<a href="`,
    },
    { variable: "unsubscribeUrl" },
    { lit: `" style="${LINK_STYLE}">Unsubscribe</a> &middot; <a href="` },
    { variable: "manageUrl" },
    { lit: `" style="${LINK_STYLE}">Manage preferences</a></div>` },
  ];
}

/** Appended to a broadcast's plain text when it has no unsubscribe link of its own. */
export const FOOTER_TEXT: Piece[] = [
  { lit: "\n\n--\nUnsubscribe: " },
  { variable: "unsubscribeUrl" },
  { lit: "\nManage preferences: " },
  { variable: "manageUrl" },
];

/**
 * The open pixel. A plain 1×1 `<img>` is what mail clients load most reliably (Gmail's image
 * proxy included), and what most ESPs send — unless it would be the reason the message looks
 * like spam. SpamAssassin's HTML_IMAGE_ONLY_04…32 (20_html_tests.cf, eval `html_image_only` in
 * HTMLEval.pm) fire on any HTML part holding an `<img>` while its HTML is under 3,200 bytes:
 * a pixel in a short order confirmation scored 2.8 of the 5.0 threshold with local rules. We
 * may not pad the customer's mail with text to dodge it, so for a short message WITHOUT
 * images of its own the pixel becomes a beacon that is no `<img>` to the filter: a 1×1 CSS
 * background for every client that renders CSS (Apple Mail, Gmail, Yahoo, Outlook.com, …)
 * and, inside an Outlook-only conditional comment (no tag to the filter), an `<img>` for
 * Outlook on Windows, whose Word engine ignores CSS backgrounds. A long message, or one with
 * its own images (the rule's verdict is then the customer's content, not ours), gets the
 * plain `<img>`. Both forms carry the same URL.
 */
export type PixelForm = "img" | "beacon";

/** Which pixel form `html` gets (see pixelPieces). */
export function pixelFormFor(html: string): PixelForm {
  const short = Buffer.byteLength(html, "utf8") < HTML_IMAGE_ONLY_MAX_BYTES;
  return short && !/<img[\s/>]/i.test(html) ? "beacon" : "img";
}

/** Above this HTML size SpamAssassin's HTML_IMAGE_ONLY rules never fire. */
const HTML_IMAGE_ONLY_MAX_BYTES = 3_200;

export function pixelPieces(form: PixelForm = "img"): Piece[] {
  const img = (): Piece[] => [
    { lit: '<img src="' },
    { pixel: true },
    { lit: '" width="1" height="1" alt="" border="0" style="display:block;width:1px;height:1px;border:0;" />' },
  ];
  if (form === "img") return img();
  return [
    { lit: "<!--[if mso]>" },
    ...img(),
    { lit: "<![endif]-->" },
    { lit: "<!--[if !mso]><!-->" },
    { lit: '<div style="width:1px;height:1px;line-height:1px;font-size:1px;background-image:url(\'' },
    { pixel: true },
    { lit: "');background-repeat:no-repeat;background-size:1px 1px;\"></div><!--<![endif]-->" },
  ];
}
