import { signToken, verifyToken } from "../../kit/src/tokens.js";

/**
 * Tracking and unsubscribe tokens. Both are HMAC-signed (kit/tokens), so the gateway
 * can act on them without a database and never redirects to a URL we did not sign.
 *
 * - link token, once per link at compile time:       {c: contentId, i: index, u: url}
 * - recipient token, once per recipient at merge time: {w, m, e, k, c}
 *
 * URLs: click `${publicUrl}/t/c/<linkToken>/<recipientToken>`, open
 * `${publicUrl}/t/o/<recipientToken>`, unsubscribe `${publicUrl}/u/<recipientToken>`
 * (GET shows a page, POST unsubscribes at once: RFC 8058 one-click), manage
 * `${publicUrl}/u/<recipientToken>?manage=1`.
 */
export interface LinkRef {
  contentId: string;
  index: number;
  url: string;
}

export interface RecipientRef {
  workspaceId: string;
  messageId: string;
  email: string;
  contactId: string;
  contentId: string;
}

interface LinkPayload {
  c: string;
  i: number;
  u: string;
}

interface RecipientPayload {
  w: string;
  m: string;
  e: string;
  k: string;
  c: string;
}

export function signLinkToken(secret: string, link: LinkRef): string {
  const payload: LinkPayload = { c: link.contentId, i: link.index, u: link.url };
  return signToken(secret, payload);
}

export function signRecipientToken(secret: string, r: RecipientRef): string {
  const payload: RecipientPayload = { w: r.workspaceId, m: r.messageId, e: r.email, k: r.contactId, c: r.contentId };
  return signToken(secret, payload);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The link behind a click token, or undefined when it is tampered, foreign, or not a
 * link token (a recipient token has another shape and is refused here). The url is
 * the original href text; use `new URL(url).href` for a Location header.
 */
export function parseClickToken(secret: string, token: string): LinkRef | undefined {
  const p = verifyToken<unknown>(secret, token);
  if (!isObject(p)) return undefined;
  const { c, i, u } = p;
  if (typeof c !== "string" || typeof u !== "string" || !Number.isSafeInteger(i) || (i as number) < 0) return undefined;
  if (!/^https?:\/\//i.test(u)) return undefined;
  return { contentId: c, index: i as number, url: u };
}

/** The recipient behind an open/click/unsubscribe token, or undefined when invalid. */
export function parseRecipientToken(secret: string, token: string): RecipientRef | undefined {
  const p = verifyToken<unknown>(secret, token);
  if (!isObject(p)) return undefined;
  const { w, m, e, k, c } = p;
  if (![w, m, e, k, c].every((v) => typeof v === "string")) return undefined;
  return { workspaceId: w as string, messageId: m as string, email: e as string, contactId: k as string, contentId: c as string };
}

/** Both halves of a click URL, which must belong to the same content. */
export function verifyClick(
  secret: string,
  linkToken: string,
  recipientToken: string,
): { link: LinkRef; recipient: RecipientRef } | undefined {
  const link = parseClickToken(secret, linkToken);
  const recipient = parseRecipientToken(secret, recipientToken);
  if (!link || !recipient || link.contentId !== recipient.contentId) return undefined;
  return { link, recipient };
}

export interface TrackingUrls {
  open: string;
  unsubscribe: string;
  /** Same URL as unsubscribe: the gateway treats POST there as one-click. */
  listUnsubscribe: string;
  manage: string;
  click(linkToken: string): string;
}

export function trackingUrls(publicUrl: string, recipientToken: string): TrackingUrls {
  const base = publicUrl.replace(/\/+$/, "");
  const unsubscribe = `${base}/u/${recipientToken}`;
  return {
    open: `${base}/t/o/${recipientToken}`,
    unsubscribe,
    listUnsubscribe: unsubscribe,
    manage: `${unsubscribe}?manage=1`,
    click: (linkToken) => `${base}/t/c/${linkToken}/${recipientToken}`,
  };
}
