import { isOwnLinkUrl } from "../urls.js";
import { findVariables } from "./variables.js";

/**
 * What the compiler does with one href:
 * - "track": absolute http(s) URL without merge variables → rewritten to the click URL.
 * - "unsafe": javascript:, vbscript: or data: → neutralised to "#". Mail clients never
 *   run them and filters score them as phishing, so the value is replaced rather than
 *   passed through (the only change made to the author's markup besides tracking).
 * - "keep": everything else, untouched: mailto:, tel:, #anchors, relative and
 *   protocol-relative links, links to our own tracking/unsubscribe pages, links that
 *   contain merge variables ({{unsubscribeUrl}}, {{manageUrl}}, or a per-recipient URL
 *   such as https://shop.test/?id={{contactId}}: the link token is signed once at
 *   compile time, so a per-recipient target cannot be in it; such links are merged per
 *   recipient and go out direct, untracked), and URLs too long to fit a token.
 */
export type HrefAction = "track" | "unsafe" | "keep";

/** Click tokens must stay under kit's 8 KB token limit after base64 (4/3) growth. */
export const MAX_TRACKED_URL_LENGTH = 4096;

const UNSAFE_SCHEME = /^(?:javascript|vbscript|data):/i;
const HTTP_SCHEME = /^https?:\/\//i;

/** What a browser navigates to: trimmed of C0/space, tab and newlines removed. */
export function cleanHref(decoded: string): string {
  // eslint-disable-next-line no-control-regex
  return decoded.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "").replace(/[\t\n\r]/g, "");
}

export function classifyHref(decoded: string, opts: { trackClicks: boolean; publicUrl?: string; literal?: boolean }): HrefAction {
  const url = cleanHref(decoded);
  if (UNSAFE_SCHEME.test(url)) return "unsafe";
  if (!opts.trackClicks || !HTTP_SCHEME.test(url)) return "keep";
  // A URL holding a variable differs per recipient; in literal content braces are just text.
  if (!opts.literal && findVariables(url).length > 0) return "keep";
  if (url.length > MAX_TRACKED_URL_LENGTH) return "keep";
  if (opts.publicUrl && isOwnLinkUrl(url, opts.publicUrl)) return "keep";
  try {
    if (!new URL(url).hostname) return "keep";
  } catch {
    return "keep";
  }
  return "track";
}

/**
 * Whether a variable at `offset` in an href's source text sits in the query string or
 * fragment of an http(s) URL, where its value must be percent-encoded
 * (`?email={{email}}` with "a+b@x.test" must arrive as a+b, not "a b").
 * A variable that is the URL itself (`{{unsubscribeUrl}}`) or in the path is merged as is.
 */
export function isInUrlQuery(hrefSource: string, offset: number): boolean {
  const before = hrefSource.slice(0, offset).replace(/^[\u0000-\u0020]+/, "");
  if (!HTTP_SCHEME.test(before)) return false;
  return before.includes("?") || before.includes("#");
}
