import { appError } from "@mailroom/kit/errors.js";

/**
 * The refusals of a provider webhook. The gateway answers them with their statuses; a
 * provider retries any non-2xx, so only what retrying cannot fix is refused here.
 */

/** The provider's variable is unset: its endpoint does not exist here (nothing is silently accepted). */
export const notConfigured = (provider: string, variable: string) =>
  appError({ code: "provider_webhook_not_configured", httpStatus: 404, message: `${provider} webhooks are not configured on this server (${variable})` });

/** A missing or wrong signature, credentials or topic: nothing was recorded. */
export const notAuthenticated = (provider: string, why: string) =>
  appError({ code: "provider_webhook_unauthenticated", httpStatus: 401, message: `${provider} webhook refused: ${why}` });

/** A body that is not what the provider sends. */
export const malformed = (provider: string, why: string) =>
  appError({ code: "invalid_provider_webhook", httpStatus: 400, message: `${provider} webhook body: ${why}` });

/** The Message-ID without its angle brackets (how SENT events record it). */
export const bareMessageId = (value: unknown): string => (typeof value === "string" ? value.trim().replace(/^<(.*)>$/, "$1") : "");

/** The SMTP reply code and enhanced status quoted in a diagnostic ("smtp; 550 5.1.1 user unknown"). */
export function replyCodesIn(text: string): { smtpCode: number; status: string } {
  const smtpCode = Number(/\b([245]\d\d)\b/.exec(text)?.[1] ?? 0);
  const status = /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(text)?.[1] ?? "";
  return { smtpCode, status };
}

/** JSON.parse that throws the provider's 400. */
export function parseJson(provider: string, body: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(body).toString("utf8"));
  } catch {
    throw malformed(provider, "not JSON");
  }
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
export const text = (v: unknown): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "");

/** A provider's timestamp (ISO 8601, or Unix seconds as a number or numeric string); undefined when absent or unreadable. */
export function dateOf(v: unknown): Date | undefined {
  const ms = typeof v === "number" || (typeof v === "string" && /^\d+(\.\d+)?$/.test(v)) ? Number(v) * 1000 : typeof v === "string" ? Date.parse(v) : NaN;
  return Number.isFinite(ms) ? new Date(ms) : undefined;
}
