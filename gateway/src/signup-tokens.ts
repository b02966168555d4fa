import { deriveKey } from "@mailroom/kit/secrets.js";
import { signToken, verifyToken } from "@mailroom/kit/tokens.js";

/**
 * The signed link of a double opt-in confirmation email (`/c/<token>`): workspace, form,
 * contact, address and expiry, HMAC-signed (kit/tokens.ts) under a key derived from
 * MAILROOM_SECRET for this purpose alone, so no tracking or unsubscribe token passes as one
 * (and none of these as those). After a rotation MAILROOM_SECRET_PREVIOUS still verifies.
 */
export interface SignupRef {
  workspaceId: string;
  formId: string;
  contactId: string;
  email: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

/** How long a confirmation link works. */
export const SIGNUP_LINK_TTL_MS = 7 * 86_400_000;
const PURPOSE = "signup-confirmation-link";
/** body "." MAC: the MAC is kit/tokens' 32 base64url characters. */
const CANONICAL = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{32}$/;

const keyOf = (secret: string) => deriveKey(secret, PURPOSE).toString("base64url");

interface Payload { v: 1; w: string; f: string; c: string; e: string; x: number }

export function signSignupToken(config: { secret: string }, ref: SignupRef): string {
  const payload: Payload = { v: 1, w: ref.workspaceId, f: ref.formId, c: ref.contactId, e: ref.email, x: Math.floor(ref.expiresAt / 1000) };
  return signToken(keyOf(config.secret), payload);
}

/** The link's reference; "expired" when it authenticates but is too old; undefined when it does not authenticate. */
export function parseSignupToken(config: { secret: string; previousSecret?: string }, token: string, now = Date.now()): SignupRef | "expired" | undefined {
  // Only the spelling we issue (base64url decoding would skip a stray character).
  if (typeof token !== "string" || token.length > 2048 || !CANONICAL.test(token)) return undefined;
  for (const secret of [config.secret, config.previousSecret]) {
    if (!secret) continue;
    const p = verifyToken<Partial<Payload>>(keyOf(secret), token);
    if (!p || typeof p !== "object") continue;
    if (p.v !== 1 || ![p.w, p.f, p.c, p.e].every((s) => typeof s === "string" && s.length > 0) || !Number.isSafeInteger(p.x)) return undefined;
    if (p.x! * 1000 < now) return "expired";
    return { workspaceId: p.w!, formId: p.f!, contactId: p.c!, email: p.e!, expiresAt: p.x! * 1000 };
  }
  return undefined;
}
