/**
 * The console's own mail (sign-in links, invitations): the HTML part. system-mail.ts sends it.
 */
import { html, render } from "./html.js";

/** A short mail: paragraphs of plain text, one button to `url`, and the address written out. */
export function systemMailHtml(paragraphs: string[], url: string, button: string): string {
  return render(html`<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5">${paragraphs.map((p) => html`<p>${p}</p>`)}
<p><a href="${url}" style="display:inline-block;padding:.6rem 1.1rem;background:#1d4ed8;color:#fff;border-radius:6px;text-decoration:none">${button}</a></p>
<p style="color:#4a4a4a;font-size:.9rem">Or open this address: ${url}</p></body></html>`);
}
