import { domainToASCII } from "node:url";
import { bounceDomainFor, verpAddress } from "@mailroom/content/verp.js";
import type { Job } from "./job.js";
import type { MergedContent, OutgoingMail, SenderCheck } from "./ports.js";

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
export function buildMail(job: Job, merged: MergedContent, sender: SenderCheck, contentVersion = 0, returnPath?: ReturnPathPolicy): OutgoingMail {
  const fromAddress = asciiDomain(sender.address || job.fromEmail);
  const to = asciiDomain(job.recipient.email);
  const fromDomain = domainOf(fromAddress);
  const bounceDomain = bounceDomainFor(returnPath?.bounceDomain, fromDomain);
  const envelopeFrom = (returnPath && verpAddress(returnPath.secret, job.deliveryId, bounceDomain)) || fromAddress;
  const headers: OutgoingMail["headers"] = [{ key: DELIVERY_ID_HEADER, value: job.deliveryId }];
  if (job.source !== "transactional" && merged.listUnsubscribeUrl) {
    headers.push({ key: "List-Unsubscribe", value: listUnsubscribe(merged.listUnsubscribeUrl, bounceDomain) });
    headers.push({ key: "List-Unsubscribe-Post", value: "List-Unsubscribe=One-Click" });
  }
  const dkim = sender.dkim && signsFor(sender.dkim.domain, fromDomain) ? sender.dkim : undefined;
  return {
    envelope: { from: envelopeFrom, to },
    from: { name: job.fromName || sender.name, address: fromAddress },
    to,
    replyTo: job.replyToList?.length ? job.replyToList : job.replyTo || undefined,
    subject: oneLine(job.subjectPrefix + merged.subject),
    html: merged.html,
    text: merged.text,
    messageId: `<${job.messageId}>`,
    headers,
    skeleton: job.source === "broadcast" ? `${job.workspaceId}/${job.contentRef}@${contentVersion}` : undefined,
    dkim: dkim && {
      domainName: dkim.domain,
      keySelector: dkim.selector,
      privateKey: dkim.privateKeyPem,
      headerFieldNames: DKIM_SIGNED_HEADERS,
    },
    meta: { deliveryId: job.deliveryId, workspaceId: job.workspaceId },
  };
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
