import type { Piece } from "./compile.js";
import { escapeHtml } from "./escape.js";
import { splitVariables } from "./variables.js";

/**
 * The markup the compiler adds: hidden preheader, unsubscribe footer, open pixel.
 * Inline styles only, as mail clients drop <style> blocks unpredictably.
 */

const PREHEADER_OPEN =
  '<div style="display:none;font-size:1px;line-height:1px;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all;">';
/** Invisible filler so the inbox preview shows the preview text, not the body after it. */
const PREHEADER_FILLER = "&#847;&zwnj;&nbsp;".repeat(40);

export function preheaderPieces(previewText: string): Piece[] {
  const pieces: Piece[] = [{ lit: PREHEADER_OPEN }];
  for (const p of splitVariables(previewText)) {
    pieces.push("literal" in p ? { lit: escapeHtml(p.literal) } : { variable: p.variable });
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

export function pixelPieces(): Piece[] {
  return [
    { lit: '<img src="' },
    { pixel: true },
    { lit: '" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;" />' },
  ];
}
