import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Signed tokens for tracking and unsubscribe links: base64url(JSON payload) + "." +
 * base64url(HMAC-SHA256). A tampered or foreign token fails verification, so the
 * gateway never redirects to a URL it did not sign.
 */
export function signToken(secret: string, payload: unknown): string {
  const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${body}.${mac(secret, body)}`;
}

export function verifyToken<T = unknown>(secret: string, token: string): T | undefined {
  if (typeof token !== "string" || token.length > 8192) return undefined;
  const dot = token.indexOf(".");
  if (dot <= 0) return undefined;
  const body = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), "base64url");
  const expected = Buffer.from(mac(secret, body), "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    return JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as T;
  } catch {
    return undefined;
  }
}

function mac(secret: string, body: string): string {
  return createHmac("sha256", secret).update(body).digest("base64url").slice(0, 32);
}
