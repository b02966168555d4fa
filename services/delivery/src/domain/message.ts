import { domainToASCII } from "node:url";
import { bounceDomainFor, verpAddress } from "@mailroom/content/verp.js";
import type { Job } from "./job.js";
import { encodeWords } from "nodemailer/lib/mime-funcs";
import type { Carried, MergedContent, OutgoingMail, SenderCheck } from "./ports.js";

/**
 * Headers a DKIM signature covers. Both List-Unsubscribe headers are included, as the
 * one-click unsubscribe spec (RFC 8058) requires, plus our correlation header.
 */
export const DKIM_SIGNED_HEADERS = [
  "From", "Sender", "Reply-To", "Subject", "Date", "Message-ID", "To", "Cc", "MIME-Version",
  "Content-Type", "Content-Transfer-Encoding", "List-Unsubscribe", "List-Unsubscribe-Post",
  "X-Mailroom-Delivery-Id",
].join(":");

export const DELIVERY_ID_HEADER = "X-Mailroom-Delivery-Id";

/** What the return path is made of: MAILROOM_SECRET and MAILROOM_BOUNCE_DOMAIN (unset: `bounces.<sender domain>`). */
export interface ReturnPathPolicy {
  secret: string;
  bounceDomain?: string;
}

/**
 * The message for one recipient: headers, bodies, envelope and signing key. A broadcast's
 * mail names its skeleton by the content ref and `contentVersion` (which loaded copy of
 * the content it was merged from).
 *
 * The envelope sender (MAIL FROM, which the receiving MTA writes as Return-Path) is the
 * delivery's VERP address on the bounce domain, so bounces reach the inbound unit and
 * name their delivery; the List-Unsubscribe mailto lives on the same domain.
 */
export function buildMail(job: Job, merged: MergedContent, sender: SenderCheck, contentVersion = 0, returnPath?: ReturnPathPolicy, carried?: Carried): OutgoingMail {
  const fromAddress = asciiDomain(sender.address || job.fromEmail);
  const to = asciiDomain(job.recipient.email);
  const fromDomain = domainOf(fromAddress);
  const bounceDomain = bounceDomainFor(returnPath?.bounceDomain, fromDomain);
  const envelopeFrom = (returnPath && verpAddress(returnPath.secret, job.deliveryId, bounceDomain)) || fromAddress;
  const headers: OutgoingMail["headers"] = [{ key: DELIVERY_ID_HEADER, value: job.deliveryId }];
  // Broadcasts and test sends by their lane; an automation's email (a transactional job) by its content's kind.
  if ((job.source !== "transactional" || merged.offersUnsubscribe) && merged.listUnsubscribeUrl) {
    headers.push({ key: "List-Unsubscribe", value: listUnsubscribe(merged.listUnsubscribeUrl, bounceDomain) });
    headers.push({ key: "List-Unsubscribe-Post", value: "List-Unsubscribe=One-Click" });
  }
  const replyTo = job.replyToList?.length ? job.replyToList : job.replyTo || undefined;
  if (carried) headers.push(...customHeaders(carried.headers, headers, replyTo !== undefined));
  const dkim = sender.dkim && signsFor(sender.dkim.domain, fromDomain) ? sender.dkim : undefined;
  // One transaction for every recipient (DESIGN §9.5): RCPT TO the recipient, then cc and bcc.
  const others = [...(job.cc ?? []), ...(job.bcc ?? [])].map(asciiDomain).filter((a) => a.toLowerCase() !== to.toLowerCase());
  const carries = Boolean(carried && (carried.cc.length || carried.headers.length || carried.attachments.length));
  return {
    envelope: others.length ? { from: envelopeFrom, to, others: [...new Set(others)] } : { from: envelopeFrom, to },
    from: { name: job.fromName || sender.name, address: fromAddress },
    to,
    cc: carried?.cc.length ? carried.cc : undefined,
    attachments: carried?.attachments.length ? carried.attachments : undefined,
    replyTo,
    subject: oneLine(job.subjectPrefix + merged.subject),
    html: merged.html,
    text: merged.text,
    messageId: `<${job.messageId}>`,
    headers,
    // Skeletons know bodies only: a message carrying more is built from scratch.
    skeleton: job.source === "broadcast" && !carries ? `${job.workspaceId}/${job.contentRef}@${contentVersion}` : undefined,
    dkim: dkim && {
      domainName: dkim.domain,
      keySelector: dkim.selector,
      privateKey: dkim.privateKeyPem,
      headerFieldNames: DKIM_SIGNED_HEADERS,
    },
    meta: { deliveryId: job.deliveryId, workspaceId: job.workspaceId },
    // Test sends ride the transactional lane, as their jobs do.
    lane: job.source === "broadcast" ? "broadcast" : "transactional",
  };
}

/**
 * A forwarded message (DESIGN §10.4): its bytes as they came (the original From and DKIM
 * signature intact), MAIL FROM its SRS address, RCPT TO the forward target. The relay, routes,
 * retries and outcome events are those of any transactional email.
 */
export function buildForwardedMail(job: Job, forwarded: { raw: Uint8Array; envelopeFrom: string }): OutgoingMail {
  const to = asciiDomain(job.recipient.email);
  return {
    envelope: { from: asciiDomain(forwarded.envelopeFrom), to },
    from: { name: job.fromName, address: job.fromEmail },
    to,
    subject: "",
    html: "",
    text: "",
    messageId: `<${job.messageId}>`,
    headers: [],
    raw: forwarded.raw,
    meta: { deliveryId: job.deliveryId, workspaceId: job.workspaceId },
    lane: "transactional",
  };
}

/**
 * Header names the system writes or that change routing (DESIGN §9.5): a custom header by one
 * of these names is never written, whatever reached the job (the email service refuses them).
 */
const SYSTEM_HEADERS = new Set([
  "from", "to", "cc", "bcc", "subject", "date", "message-id", "return-path", "sender", "dkim-signature",
  "list-unsubscribe", "list-unsubscribe-post", "mime-version", "received", DELIVERY_ID_HEADER.toLowerCase(),
]);
// RFC 5322 field name: printable ASCII but the colon.
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]{1,76}$/;
// eslint-disable-next-line no-control-regex
const LINE_BREAK = /[\r\n\u0000]/;

/**
 * The sender's custom headers in their order, after the system's: none that the system sets
 * (or Reply-To when the email has one), none with a malformed name or a line break in its
 * value; other controls become spaces and non-ASCII values RFC 2047 words.
 */
export function customHeaders(
  custom: ReadonlyArray<{ name: string; value: string }>,
  system: ReadonlyArray<{ key: string }>,
  hasReplyTo: boolean,
): Array<{ key: string; value: string }> {
  const taken = new Set(system.map((h) => h.key.toLowerCase()));
  if (hasReplyTo) taken.add("reply-to");
  const out: Array<{ key: string; value: string }> = [];
  for (const { name, value } of custom) {
    const lower = name.toLowerCase();
    if (!FIELD_NAME.test(name) || SYSTEM_HEADERS.has(lower) || lower.startsWith("content-") || taken.has(lower) || LINE_BREAK.test(value)) continue;
    const clean = oneLine(value);
    out.push({ key: name, value: /^[\x20-\x7e]*$/.test(clean) ? clean : encodeWords(clean, "Q", 52) });
  }
  return out;
}

/**
 * `<https://…/u/TOKEN>, <mailto:unsubscribe+TOKEN@bounce domain>`: the https one for one-click
 * POST, the mailto for clients that only know mail (`mailto:unsubscribe@domain?subject=
 * unsubscribe%20TOKEN` when the token is too long for a local part).
 */
export function listUnsubscribe(oneClickUrl: string, bounceDomain: string): string {
  const token = tokenOf(oneClickUrl);
  const https = `<${oneClickUrl}>`;
  if (!token || !bounceDomain) return https;
  // A local part may hold 64 octets (RFC 5321); longer tokens travel in the subject.
  const local = `unsubscribe+${token}`;
  const mailto = local.length <= 64 ? `mailto:${local}@${bounceDomain}` : `mailto:unsubscribe@${bounceDomain}?subject=unsubscribe%20${token}`;
  return `${https}, <${mailto}>`;
}

function tokenOf(url: string): string | undefined {
  try {
    const last = new URL(url).pathname.split("/").filter(Boolean).pop();
    return last && /^[A-Za-z0-9_.\-]+$/.test(last) ? last : undefined;
  } catch {
    return undefined;
  }
}

/** Internationalised domains go out in their ASCII (punycode) form, in headers and envelope. */
export function asciiDomain(address: string): string {
  const at = address.lastIndexOf("@");
  if (at < 0 || /^[\x00-\x7f]*$/.test(address)) return address;
  const ascii = domainToASCII(address.slice(at + 1));
  return ascii ? `${address.slice(0, at)}@${ascii}` : address;
}

export function domainOf(address: string): string {
  const at = address.lastIndexOf("@");
  return at < 0 ? "" : address.slice(at + 1).toLowerCase();
}

/** A key for acme.test signs mail from acme.test and its subdomains, nothing else. */
function signsFor(keyDomain: string, fromDomain: string): boolean {
  const d = keyDomain.toLowerCase();
  return fromDomain === d || fromDomain.endsWith(`.${d}`);
}

/** Merged values may hold any control character (template variables): none reaches the header raw. */
function oneLine(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
}

const contentVersions = new WeakMap<object, number>();
let lastContentVersion = 0;

/**
 * A number per loaded copy of compiled content. Content is immutable per ref once it is
 * scheduled; a copy loaded again (evicted from the cache, reloaded) counts as a new version.
 */
export function contentVersionOf(compiled: object): number {
  let version = contentVersions.get(compiled);
  if (version === undefined) contentVersions.set(compiled, (version = ++lastContentVersion));
  return version;
}
