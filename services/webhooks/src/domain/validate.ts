import { badRequest } from "@mailroom/kit/errors.js";
import { EVENTS_NOT_AVAILABLE, WEBHOOK_EVENTS, type WebhookEventName, type WebhookStatus } from "./model.js";

const MAX_URL_LENGTH = 2048;
const MAX_TOKEN_LENGTH = 1024;
const MAX_DISPLAY_NAME = 200;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** An http(s) URL without credentials (a signing secret belongs in the token, not the URL). */
export function validUrl(value: unknown): string {
  if (typeof value !== "string" || value.trim() === "") throw badRequest("invalid_payload", "url is required");
  const url = value.trim();
  if (url.length > MAX_URL_LENGTH || CONTROL.test(url)) throw badRequest("invalid_payload", "url is not a valid URL");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest("invalid_payload", "url is not a valid URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw badRequest("invalid_payload", "url must be an http or https URL");
  }
  if (parsed.username || parsed.password) {
    throw badRequest("invalid_payload", "url must not contain credentials; the token signs every delivery");
  }
  if (!parsed.hostname) throw badRequest("invalid_payload", "url needs a host");
  return url;
}

/** Known event names, each once; unknown ones are refused naming the allowed values. */
export function validEvents(value: unknown): WebhookEventName[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw badRequest("invalid_payload", `events must list at least one of: ${WEBHOOK_EVENTS.join(", ")}`, {
      extra: { allowedValues: JSON.stringify(WEBHOOK_EVENTS) },
    });
  }
  const unknown = value.filter((e) => typeof e !== "string" || !WEBHOOK_EVENTS.includes(e));
  if (unknown.length > 0) {
    throw badRequest(
      "invalid_payload",
      `Unknown webhook event(s): ${unknown.map(String).join(", ")}. Allowed values: ${WEBHOOK_EVENTS.join(", ")}`,
      { extra: { allowedValues: JSON.stringify(WEBHOOK_EVENTS) } },
    );
  }
  const unavailable = (value as string[]).filter((e) => EVENTS_NOT_AVAILABLE[e]);
  if (unavailable.length > 0) {
    const names = [...new Set(unavailable)];
    const why = names.map((e) => `${e} arrives with ${EVENTS_NOT_AVAILABLE[e]}`).join("; ");
    throw badRequest(
      "event_not_available",
      `${names.join(", ")} cannot be subscribed to yet: nothing produces ${names.length > 1 ? "them" : "it"} (${why}, which this server does not have yet). Subscribe to the other events for now.`,
      { extra: { unavailableEvents: JSON.stringify(names) } },
    );
  }
  return [...new Set(value as WebhookEventName[])];
}

export function validToken(value: unknown): string {
  if (typeof value !== "string" || value.length === 0) throw badRequest("invalid_payload", "token must be a non-empty string");
  if (value.length > MAX_TOKEN_LENGTH || CONTROL.test(value)) {
    throw badRequest("invalid_payload", `token must be at most ${MAX_TOKEN_LENGTH} printable characters`);
  }
  return value;
}

export function validDisplayName(value: unknown): string {
  if (typeof value !== "string") throw badRequest("invalid_payload", "displayName must be a string");
  const name = value.trim();
  if (name.length > MAX_DISPLAY_NAME || CONTROL.test(name)) {
    throw badRequest("invalid_payload", `displayName must be at most ${MAX_DISPLAY_NAME} printable characters`);
  }
  return name;
}

/** The statuses a caller may set; BANNED is the operator's. */
export function validRequestedStatus(value: WebhookStatus): "ACTIVE" | "PAUSED" {
  if (value !== "ACTIVE" && value !== "PAUSED") {
    throw badRequest("invalid_payload", "status must be one of: ACTIVE, PAUSED", { extra: { allowedValues: JSON.stringify(["ACTIVE", "PAUSED"]) } });
  }
  return value;
}
