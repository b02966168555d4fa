import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * VERP return paths (variable envelope return path): every message leaves with its own
 * envelope sender, `bounces+<token>@<bounce domain>`, so whatever comes back to that
 * address (a DSN, an auto-reply) names the delivery it belongs to, even when the
 * bounce quotes nothing of the original message.
 *
 * The token is base32(deliveryId ‖ MAC) in lower case: base32 because some MTAs fold the
 * case of local parts, and the MAC (HMAC-SHA256 under a key derived from the secret,
 * truncated) so nobody can make us suppress an address by mailing a made-up token.
 * It carries only the delivery id; the inbound unit looks up the workspace and recipient
 * from the SENT event it remembered. A local part holds 64 octets (RFC 5321 §4.5.3.1.1):
 * `bounces+` leaves 56 base32 characters = 35 bytes = a 30-byte delivery id (a `trs_`
 * id is exactly 30) and a 40-bit MAC. Longer ids get no VERP address (undefined): the
 * caller then keeps the plain sender as the envelope sender.
 */
export const VERP_LOCAL_PREFIX = "bounces";
export const MAX_LOCAL_PART = 64;
const MAC_BYTES = 5;
/** Delivery ids longer than this (in UTF-8 bytes) do not fit a local part. */
export const MAX_VERP_DELIVERY_ID_BYTES = Math.floor(((MAX_LOCAL_PART - VERP_LOCAL_PREFIX.length - 1) * 5) / 8) - MAC_BYTES;

/** The token key, kept apart from the tracking-link key that uses the secret itself. */
function verpKey(secret: string): Buffer {
  return createHmac("sha256", secret).update("mailroom/verp/v1").digest();
}

function mac(secret: string, id: Buffer): Buffer {
  return createHmac("sha256", verpKey(secret)).update(id).digest().subarray(0, MAC_BYTES);
}

/** The signed token of a delivery, or undefined when the id is too long for a local part. */
export function verpToken(secret: string, deliveryId: string): string | undefined {
  const id = Buffer.from(deliveryId, "utf8");
  if (id.length === 0 || id.length > MAX_VERP_DELIVERY_ID_BYTES) return undefined;
  return base32Encode(Buffer.concat([id, mac(secret, id)]));
}

/** The delivery id behind a token, or undefined when it is malformed or not ours. */
export function parseVerpToken(secret: string, token: string): string | undefined {
  const bytes = base32Decode(token);
  if (!bytes || bytes.length <= MAC_BYTES) return undefined;
  const id = bytes.subarray(0, bytes.length - MAC_BYTES);
  const given = bytes.subarray(bytes.length - MAC_BYTES);
  if (!timingSafeEqual(given, mac(secret, id))) return undefined;
  const deliveryId = id.toString("utf8");
  // Only ids we could have signed: valid UTF-8 that round-trips.
  return Buffer.from(deliveryId, "utf8").equals(id) ? deliveryId : undefined;
}

/**
 * `bounces+<token>@<bounceDomain>`, the envelope sender (MAIL FROM) of one delivery, or
 * undefined when its id is too long (send with the plain sender then).
 */
export function verpAddress(secret: string, deliveryId: string, bounceDomain: string): string | undefined {
  const token = verpToken(secret, deliveryId);
  const domain = bounceDomain.trim().toLowerCase();
  if (!token || !domain) return undefined;
  return `${VERP_LOCAL_PREFIX}+${token}@${domain}`;
}

/** The delivery a VERP address belongs to, or undefined when it is not a valid one of ours. */
export function parseVerpAddress(secret: string, address: string): { deliveryId: string; domain: string } | undefined {
  const parts = splitAddress(address);
  if (!parts) return undefined;
  const { local, domain } = parts;
  const prefix = `${VERP_LOCAL_PREFIX}+`;
  if (!local.toLowerCase().startsWith(prefix)) return undefined;
  const deliveryId = parseVerpToken(secret, local.slice(prefix.length));
  return deliveryId ? { deliveryId, domain } : undefined;
}

/** The label of the per-domain bounce subdomain: `bounces.<sender domain>`. */
export const BOUNCE_SUBDOMAIN_LABEL = "bounces";

/**
 * The bounce domain of a sender domain (the domain of its VERP return path and its
 * List-Unsubscribe mailto): the configured shared one (MAILROOM_BOUNCE_DOMAIN), else
 * `bounces.<sender domain>`. Not the sender's domain itself: mail reaches the inbound unit
 * only where the MX points at Mailroom, and pointing the sender domain's MX at us would
 * take over the customer's own incoming mail. A subdomain keeps relaxed SPF/DMARC
 * alignment (same organisational domain), as Postmark's pm-bounces and SendGrid's em
 * subdomains do. Accepts a domain or an address.
 */
export function bounceDomainFor(configured: string | undefined, sender: string): string {
  if (configured?.trim()) return configured.trim().toLowerCase();
  const domain = (sender.includes("@") ? splitAddress(sender)?.domain : sender.trim().toLowerCase()) ?? "";
  if (!domain.includes(".")) return "";
  return isPerDomainBounceDomain(domain) ? domain : `${BOUNCE_SUBDOMAIN_LABEL}.${domain}`;
}

/** `bounces.<something>`: a domain `bounceDomainFor` derives when no shared one is configured. */
export function isPerDomainBounceDomain(domain: string): boolean {
  const d = domain.trim().toLowerCase();
  return d.startsWith(`${BOUNCE_SUBDOMAIN_LABEL}.`) && d.length > BOUNCE_SUBDOMAIN_LABEL.length + 1 && d.includes(".", BOUNCE_SUBDOMAIN_LABEL.length + 1);
}

/** Local part and lower-cased domain of `local@domain` (with or without angle brackets). */
export function splitAddress(address: string): { local: string; domain: string } | undefined {
  const bare = address.trim().replace(/^<(.*)>$/, "$1");
  const at = bare.lastIndexOf("@");
  if (at <= 0 || at === bare.length - 1) return undefined;
  return { local: bare.slice(0, at), domain: bare.slice(at + 1).toLowerCase() };
}

// RFC 4648 base32 without padding, lower case (decoding accepts either case).
const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

function base32Encode(bytes: Buffer): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function base32Decode(text: string): Buffer | undefined {
  if (text.length === 0 || text.length > MAX_LOCAL_PART) return undefined;
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const char of text.toLowerCase()) {
    const index = ALPHABET.indexOf(char);
    if (index < 0) return undefined;
    value = ((value << 5) | index) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  // Leftover bits are padding and must be zero, so each byte string has one spelling.
  if (bits >= 5 || (value & ((1 << bits) - 1)) !== 0) return undefined;
  return Buffer.from(out);
}
