import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { deriveKey, type SecretKeys } from "@mailroom/kit/secrets.js";

/**
 * The team's bearer tokens: invitations and magic links are signed with MAILROOM_SECRET
 * (HMAC-SHA256 under a key derived per kind), so a token altered in any character is refused
 * before the store is asked; sessions are plain random. Every kind is stored only as its
 * SHA-256 (`hashTeamToken`), so the store never holds a usable token.
 *
 *   <kind>_<base64url(nonce 24 bytes ‖ mac 16 bytes)>
 */
export type SignedTokenKind = "inv" | "mlk";

const NONCE_BYTES = 24;
const MAC_BYTES = 16;
const purpose = (kind: SignedTokenKind) => `team-token/${kind}`;

const mac = (secret: string, kind: SignedTokenKind, nonce: Buffer) =>
  createHmac("sha256", deriveKey(secret, purpose(kind))).update(kind).update(nonce).digest().subarray(0, MAC_BYTES);

export function signTeamToken(secrets: SecretKeys, kind: SignedTokenKind): string {
  const nonce = randomBytes(NONCE_BYTES);
  return `${kind}_${Buffer.concat([nonce, mac(secrets.current, kind, nonce)]).toString("base64url")}`;
}

/** True when `token` is a `kind` token signed with the current or the previous secret. */
export function verifyTeamToken(secrets: SecretKeys, kind: SignedTokenKind, token: unknown): token is string {
  if (typeof token !== "string" || token.length > 200 || !token.startsWith(`${kind}_`)) return false;
  const body = token.slice(kind.length + 1);
  const raw = Buffer.from(body, "base64url");
  // base64url decoding skips junk characters: only the canonical spelling is the token.
  if (raw.length !== NONCE_BYTES + MAC_BYTES || raw.toString("base64url") !== body) return false;
  const nonce = raw.subarray(0, NONCE_BYTES);
  const given = raw.subarray(NONCE_BYTES);
  const secrets2 = [secrets.current, ...(secrets.previous && secrets.previous !== secrets.current ? [secrets.previous] : [])];
  return secrets2.some((s) => timingSafeEqual(mac(s, kind, nonce), given));
}

/** A session token: 32 random bytes. */
export function newSessionToken(): string {
  return `ses_${randomBytes(32).toString("base64url")}`;
}

export const hashTeamToken = (token: string): string => createHash("sha256").update(token, "utf8").digest("hex");
