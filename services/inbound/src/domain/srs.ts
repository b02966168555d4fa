import { createHmac, timingSafeEqual } from "node:crypto";
import type { TokenSecret } from "@mailroom/content/tokens.js";

/**
 * The Sender Rewriting Scheme (Shevek, "Sender Rewriting Scheme", 2004; libsrs2's layout), for
 * forwarded mail (DESIGN §10.4): a message forwarded with its original envelope sender would
 * fail that sender's SPF at the next hop, so it leaves with an address of ours that encodes
 * the original, and that only we can mint:
 *
 *   SRS0=HHHHHH=TT=orig-domain=orig-local@our-domain
 *
 * TT is the day (days since the epoch, modulo 1024, two base32 characters), so an address
 * expires after MAX_AGE_DAYS; HHHHHH is a MAC of the day and the original address (HMAC-SHA256
 * under a key derived from MAILROOM_SECRET, truncated to 30 bits, base32). Everything hashed is
 * lower-cased, and the alphabet is lower-case base32, so an MTA that folds the case of local
 * parts breaks nothing. An original that is already SRS0 (a forward of a forward) becomes
 * SRS1=HHHHHH=first-forwarder==HHH=TT=orig-domain=orig-local@our-domain, which reverses to the
 * SRS0 address at the first forwarder (who reverses the rest), as the scheme describes.
 */
export const SRS_MAX_AGE_DAYS = 21;
const HASH_CHARS = 6;
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";
const DAY_MS = 24 * 3600_000;
const STAMP_MOD = 1024;

/** The MAC key, kept apart from other uses of the secret (VERP, tracking links). */
function srsKey(secret: string): Buffer {
  return createHmac("sha256", secret).update("mailroom/srs/v1").digest();
}

function hash(secret: string, ...parts: string[]): string {
  const mac = createHmac("sha256", srsKey(secret)).update(parts.map((p) => p.toLowerCase()).join("\u0000")).digest();
  // 30 bits: the first 4 bytes, 5 bits per character.
  const bits = mac.readUInt32BE(0);
  let out = "";
  for (let i = 0; i < HASH_CHARS; i++) out += BASE32[(bits >>> (27 - 5 * i)) & 31];
  return out;
}

function stampOf(now: Date): string {
  const day = Math.floor(now.getTime() / DAY_MS) % STAMP_MOD;
  return BASE32[day >> 5]! + BASE32[day & 31]!;
}

/** Days since the stamp was minted (its modulo-1024 wraparound undone), or undefined when it is no stamp. */
function ageOf(stamp: string, now: Date): number | undefined {
  if (!/^[a-z2-7]{2}$/.test(stamp)) return undefined;
  const then = BASE32.indexOf(stamp[0]!) * 32 + BASE32.indexOf(stamp[1]!);
  const today = Math.floor(now.getTime() / DAY_MS) % STAMP_MOD;
  return (today - then + STAMP_MOD) % STAMP_MOD;
}

const issuing = (secret: TokenSecret) => (typeof secret === "string" ? secret : secret[0]!);
const secretsOf = (secret: TokenSecret) => (typeof secret === "string" ? [secret] : [...secret]);

function sameHash(given: string, expected: string): boolean {
  const a = Buffer.from(given.toLowerCase());
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function split(address: string): { local: string; domain: string } | undefined {
  const bare = address.trim().replace(/^<(.*)>$/, "$1");
  const at = bare.lastIndexOf("@");
  if (at <= 0 || at === bare.length - 1) return undefined;
  return { local: bare.slice(0, at), domain: bare.slice(at + 1).toLowerCase() };
}

/**
 * The SRS address of `sender` at `domain`, or "" for the null sender (a bounce is forwarded
 * with the null sender: nothing may bounce back to it).
 */
export function srsForward(secret: TokenSecret, sender: string, domain: string, now = new Date()): string {
  const parts = split(sender);
  if (!parts) return "";
  const ours = domain.trim().toLowerCase();
  const key = issuing(secret);
  // Already one of ours (a forward rule whose target is forwarded back here): no need to wrap it again.
  if (parts.domain === ours && srsReverse(secret, sender, now)) return `${parts.local}@${ours}`;
  const prefix = parts.local.slice(0, 5).toUpperCase();
  if (prefix === "SRS0=" || prefix === "SRS1=") {
    // SRS0=HHH=TT=d=l@first → SRS1=HHH=first==HHH=TT=d=l; SRS1=HHH=first=… @x → SRS1=HHH=first=…
    const first = prefix === "SRS0=" ? parts.domain : parts.local.slice(5).split("=")[1] ?? "";
    const rest = prefix === "SRS0=" ? `=${parts.local.slice(5)}` : parts.local.slice(5).split("=").slice(2).join("=");
    if (first && rest) return `SRS1=${hash(key, first, rest)}=${first}=${rest}@${ours}`;
  }
  const stamp = stampOf(now);
  return `SRS0=${hash(key, stamp, parts.domain, parts.local)}=${stamp}=${parts.domain}=${parts.local}@${ours}`;
}

/**
 * The address an SRS address of ours stands for (SRS0: the original sender; SRS1: the first
 * forwarder's SRS0 address), or undefined when it is not one we minted under any of the
 * secrets (MAILROOM_SECRET and, while rotating, the previous one) or it is older than
 * SRS_MAX_AGE_DAYS.
 */
export function srsReverse(secret: TokenSecret, address: string, now = new Date()): string | undefined {
  const parts = split(address);
  if (!parts) return undefined;
  const tag = parts.local.slice(0, 5).toUpperCase();
  const fields = parts.local.slice(5).split("=");
  if (tag === "SRS0=") {
    // hash, stamp, domain, then the local part (which may itself hold "=").
    if (fields.length < 4) return undefined;
    const [given, stamp, domain] = [fields[0]!, fields[1]!.toLowerCase(), fields[2]!.toLowerCase()];
    const local = fields.slice(3).join("=");
    if (!domain || !local) return undefined;
    const age = ageOf(stamp, now);
    if (age === undefined || age > SRS_MAX_AGE_DAYS) return undefined;
    if (!secretsOf(secret).some((s) => sameHash(given, hash(s, stamp, domain, local)))) return undefined;
    return `${local}@${domain}`;
  }
  if (tag === "SRS1=") {
    // hash, first forwarder, then "=" and the SRS0 fields.
    if (fields.length < 3) return undefined;
    const [given, first] = [fields[0]!, fields[1]!.toLowerCase()];
    const rest = fields.slice(2).join("=");
    if (!first || !rest) return undefined;
    if (!secretsOf(secret).some((s) => sameHash(given, hash(s, first, rest)))) return undefined;
    return `SRS0${rest}@${first}`;
  }
  return undefined;
}

/** `SRS0=…` / `SRS1=…`: a local part to check with srsReverse (cheap test before the MAC). */
export function looksLikeSrs(address: string): boolean {
  return /^\s*<?srs[01]=/i.test(address);
}
