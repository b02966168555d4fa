import { createCipheriv, createHmac, timingSafeEqual } from "node:crypto";
import { deriveKey } from "@mailroom/kit/secrets.js";
import { verifyToken } from "@mailroom/kit/tokens.js";
import { Reader, Writer } from "./token-codec.js";
import { linkBase, linkPath, manageUrl, unsubscribeUrl } from "./urls.js";

/**
 * Tracking and unsubscribe tokens. The gateway acts on them without a database and never
 * redirects to a URL we did not issue.
 *
 * - link token, once per link at compile time:       contentId, index, url
 * - recipient token, once per recipient at merge time: issued-at day, workspace, content,
 *   contact, email
 *
 * Format 3 (issued now) is opaque and short: base64url(header ‖ IV ‖ AES-256-CTR(fields)),
 * a synthetic-IV construction (as in SIV, RFC 5297): the 12-byte IV is an HMAC-SHA256 of
 * header and fields under a MAC key, and is also the tag — verifying decrypts and recomputes
 * it. So a token costs 13 bytes of framing, is deterministic (a message merged twice, by the
 * byte and the string merge or on a retry, carries the same links), and no IV can repeat
 * for different contents. Both keys are derived from MAILROOM_SECRET by HKDF. The header
 * byte holds the format and the kind, so a link token never passes as a recipient token.
 * The fields are packed in binary (token-codec.ts): a typical transactional token for a
 * 23-character address is 98 characters, a broadcast one (with a contact id) 119.
 *
 * The Message-ID is not in the token: it names nothing the token does not (the content and
 * the recipient), and with its domain it would cost ~30 bytes. The one fact consumers take
 * from it — whether the message is a broadcast's own or a test send of it (broadcast
 * Message-IDs are `<contact>.<broadcast>@domain`) — is the kind, and comes back as
 * `testSend`.
 *
 * Format 1 (readable JSON + HMAC, `body.mac`, sent until 2026-11) is still verified, so
 * links in mail already delivered keep working; nothing issues it any more. (Format 2,
 * AES-GCM, was never released and is not read.)
 *
 * Every function takes the secret, or the secrets [current, previous…] after a rotation:
 * the first one issues, all of them verify.
 *
 * The URLs they travel in (open, click, unsubscribe, manage) have their shapes in urls.ts.
 */
export interface LinkRef {
  contentId: string;
  index: number;
  url: string;
}

export interface RecipientRef {
  workspaceId: string;
  /**
   * The message's Message-ID. Given when issuing; read back only from format-1 tokens ("" from
   * format 3, which identifies the message by content and recipient instead).
   */
  messageId: string;
  email: string;
  contactId: string;
  contentId: string;
  /** A broadcast test send (a preview), not one of the broadcast's own messages. Read back only. */
  testSend?: boolean;
}

/** MAILROOM_SECRET, or [MAILROOM_SECRET, MAILROOM_SECRET_PREVIOUS] while rotating. */
export type TokenSecret = string | readonly string[];

const FORMAT = 3;
/** Recipient of a transactional email, or of a broadcast test send. */
const KIND_RECIPIENT = 1;
const KIND_LINK = 2;
/** Recipient of one of a broadcast's own messages (Message-ID `<contact>.<broadcast>@…`). */
const KIND_BROADCAST_RECIPIENT = 3;
const ENCRYPTION_PURPOSE = "tracking-token/v3/encryption";
const MAC_PURPOSE = "tracking-token/v3/mac";
const IV_BYTES = 12;
/** Longer strings are not tokens we issued; refused before any decoding. */
const MAX_TOKEN_CHARS = 8192;
/** Issued-at is kept in whole days since this date (2 bytes, good until 2203). */
const EPOCH_MS = Date.UTC(2024, 0, 1);
const DAY_MS = 86_400_000;
const COUNTER_START = Buffer.alloc(4);

/** The token secrets of a loaded config: MAILROOM_SECRET, then MAILROOM_SECRET_PREVIOUS. */
export function tokenSecretsOf(config: { secret: string; previousSecret?: string }): TokenSecret {
  return config.previousSecret ? [config.secret, config.previousSecret] : config.secret;
}

const issuingSecret = (secret: TokenSecret): string => (typeof secret === "string" ? secret : secret[0]);
const verifyingSecrets = (secret: TokenSecret): readonly string[] => (typeof secret === "string" ? [secret] : secret);

/** The synthetic IV: a PRF of everything in the token, so it authenticates all of it. */
function syntheticIv(secret: string, header: Buffer, fields: Buffer): Buffer {
  return createHmac("sha256", deriveKey(secret, MAC_PURPOSE)).update(header).update(fields).digest().subarray(0, IV_BYTES);
}

/** AES-256-CTR from counter block IV ‖ 0: encrypts and decrypts alike. */
function ctr(secret: string, iv: Buffer, input: Buffer): Buffer {
  const cipher = createCipheriv("aes-256-ctr", deriveKey(secret, ENCRYPTION_PURPOSE), Buffer.concat([iv, COUNTER_START]));
  return cipher.update(input);
}

function seal(secret: TokenSecret, kind: number, fields: Buffer): string {
  const header = Buffer.of((FORMAT << 4) | kind);
  const issuing = issuingSecret(secret);
  const iv = syntheticIv(issuing, header, fields);
  return Buffer.concat([header, iv, ctr(issuing, iv, fields)]).toString("base64url");
}

/** The kind and fields of a format-3 token of one of `kinds`, or undefined when it does not authenticate. */
function open(secret: TokenSecret, kinds: readonly number[], token: string): { kind: number; fields: Buffer } | undefined {
  const raw = Buffer.from(token, "base64url");
  if (raw.length < 1 + IV_BYTES || raw[0] >> 4 !== FORMAT || !kinds.includes(raw[0] & 0x0f)) return undefined;
  // base64url decoding skips junk characters; only the canonical spelling is the token.
  if (raw.toString("base64url") !== token) return undefined;
  const header = raw.subarray(0, 1);
  const iv = raw.subarray(1, 1 + IV_BYTES);
  const body = raw.subarray(1 + IV_BYTES);
  for (const s of verifyingSecrets(secret)) {
    const fields = ctr(s, iv, body);
    if (timingSafeEqual(syntheticIv(s, header, fields), iv)) return { kind: raw[0] & 0x0f, fields };
  }
  return undefined;
}

const RECIPIENT_KINDS = [KIND_RECIPIENT, KIND_BROADCAST_RECIPIENT] as const;

const isLegacy = (token: string) => token.includes(".");

/** A format-1 token's JSON payload, checked against each secret. */
function legacyPayload(secret: TokenSecret, token: string): Record<string, unknown> | undefined {
  for (const s of verifyingSecrets(secret)) {
    const p = verifyToken<unknown>(s, token);
    if (typeof p === "object" && p !== null && !Array.isArray(p)) return p as Record<string, unknown>;
  }
  return undefined;
}

export function signLinkToken(secret: TokenSecret, link: LinkRef): string {
  const w = new Writer();
  w.id(link.contentId);
  w.varint(link.index);
  w.utf8(link.url);
  return seal(secret, KIND_LINK, w.bytes());
}

/** Whether a Message-ID is the broadcast's own for this recipient (broadcast's messageIdOf). */
const isBroadcastMessage = (r: RecipientRef) =>
  r.contentId.startsWith("cmp_") && r.contactId !== "" && r.messageId.startsWith(`${r.contactId}.${r.contentId}@`);

export function signRecipientToken(secret: TokenSecret, r: RecipientRef, issuedAt = Date.now()): string {
  const w = new Writer();
  w.uint16(Math.max(0, Math.min(0xffff, Math.floor((issuedAt - EPOCH_MS) / DAY_MS))));
  w.id(r.workspaceId);
  w.id(r.contentId);
  w.id(r.contactId);
  w.utf8(r.email);
  return seal(secret, isBroadcastMessage(r) ? KIND_BROADCAST_RECIPIENT : KIND_RECIPIENT, w.bytes());
}

const isHttpUrl = (u: string) => /^https?:\/\//i.test(u);

/**
 * The link behind a click token, or undefined when it is tampered, foreign, or not a
 * link token (a recipient token is refused here). The url is the original href text;
 * use `new URL(url).href` for a Location header.
 */
export function parseClickToken(secret: TokenSecret, token: string): LinkRef | undefined {
  if (typeof token !== "string" || token.length === 0 || token.length > MAX_TOKEN_CHARS) return undefined;
  let link: LinkRef;
  if (isLegacy(token)) {
    const p = legacyPayload(secret, token);
    if (!p) return undefined;
    const { c, i, u } = p;
    if (typeof c !== "string" || typeof u !== "string" || !Number.isSafeInteger(i) || (i as number) < 0) return undefined;
    link = { contentId: c, index: i as number, url: u };
  } else {
    const opened = open(secret, [KIND_LINK], token);
    if (!opened) return undefined;
    try {
      const r = new Reader(opened.fields);
      link = { contentId: r.id(), index: r.varint(), url: r.rest() };
    } catch {
      return undefined;
    }
  }
  return isHttpUrl(link.url) ? link : undefined;
}

/** The recipient behind an open/click/unsubscribe token, or undefined when invalid. */
export function parseRecipientToken(secret: TokenSecret, token: string): RecipientRef | undefined {
  if (typeof token !== "string" || token.length === 0 || token.length > MAX_TOKEN_CHARS) return undefined;
  if (isLegacy(token)) {
    const p = legacyPayload(secret, token);
    if (!p) return undefined;
    const { w, m, e, k, c } = p;
    if (![w, m, e, k, c].every((v) => typeof v === "string")) return undefined;
    return { workspaceId: w as string, messageId: m as string, email: e as string, contactId: k as string, contentId: c as string };
  }
  const opened = open(secret, RECIPIENT_KINDS, token);
  if (!opened) return undefined;
  try {
    const r = new Reader(opened.fields);
    r.uint16(); // issued-at day: carried for expiry policies, not needed to act on the token
    const workspaceId = r.id();
    const contentId = r.id();
    const contactId = r.id();
    const email = r.rest();
    const testSend = opened.kind === KIND_RECIPIENT && contentId.startsWith("cmp_");
    return { workspaceId, messageId: "", email, contactId, contentId, ...(testSend ? { testSend } : {}) };
  } catch {
    return undefined;
  }
}

/** The day a format-3 recipient token was issued, or undefined (format 1, or invalid). */
export function recipientTokenIssuedAt(secret: TokenSecret, token: string): Date | undefined {
  if (typeof token !== "string" || isLegacy(token) || token.length > MAX_TOKEN_CHARS) return undefined;
  const opened = open(secret, RECIPIENT_KINDS, token);
  if (!opened || opened.fields.length < 2) return undefined;
  return new Date(EPOCH_MS + opened.fields.readUInt16BE(0) * DAY_MS);
}

/** Both halves of a click URL, which must belong to the same content. */
export function verifyClick(
  secret: TokenSecret,
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
  const base = linkBase(publicUrl);
  const unsubscribe = unsubscribeUrl(base, recipientToken);
  return {
    open: base + linkPath("open", { token: recipientToken }),
    unsubscribe,
    listUnsubscribe: unsubscribe,
    manage: manageUrl(unsubscribe),
    click: (linkToken) => base + linkPath("click", { link: linkToken, token: recipientToken }),
  };
}
