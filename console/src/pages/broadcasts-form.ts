/**
 * The broadcast draft form's values: what was typed (strings, so a refused form comes back as
 * it was), a saved broadcast's, and the /v1 create/update request made from them, checked with
 * the route's schema (services/http/src/broadcasts-schema.ts) before the broadcast service sees it.
 */
import type { Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { abTestRpc, createBroadcastRequestSchema, type AudienceRequest } from "@mailroom/http/broadcasts-schema.js";
import { invalid, refusal } from "@mailroom/http/errors.js";
import { str } from "../form-values.js";
import { EVERYONE, audienceFromForm, audienceRequest, audienceRpc, audienceValuesOf, type AudienceValues } from "./audience-picker.js";
import { NO_AB, abFromForm, abRequest, abValuesOf, type AbValues } from "./broadcasts-ab.js";

export interface DraftValues {
  name: string;
  subject: string;
  previewText: string;
  fromEmail: string;
  fromName: string;
  replyTo: string;
  html: string;
  text: string;
  trackOpens: boolean;
  trackClicks: boolean;
  allowUnknownVariables: boolean;
  audience: AudienceValues;
  ab: AbValues;
}

export const EMPTY_DRAFT: DraftValues = {
  name: "", subject: "", previewText: "", fromEmail: "", fromName: "", replyTo: "", html: "", text: "",
  trackOpens: true, trackClicks: true, allowUnknownVariables: false, audience: EVERYONE, ab: NO_AB,
};

export function draftValuesOf(b: Broadcast): DraftValues {
  return {
    name: b.name, subject: b.subject, previewText: b.previewText, fromEmail: b.fromEmail, fromName: b.fromName,
    replyTo: b.replyTo.join(", "), html: b.html, text: b.text,
    trackOpens: b.settings?.trackOpens ?? true, trackClicks: b.settings?.trackClicks ?? true, allowUnknownVariables: b.allowUnknownVariables,
    audience: audienceValuesOf(b.audience),
    ab: abValuesOf(b),
  };
}

export function draftValuesFromForm(body: unknown): DraftValues {
  return {
    name: str(body, "name"), subject: str(body, "subject"), previewText: str(body, "previewText"),
    fromEmail: str(body, "fromEmail"), fromName: str(body, "fromName"), replyTo: str(body, "replyTo"),
    html: str(body, "html"), text: str(body, "text"),
    trackOpens: str(body, "trackOpens") === "on", trackClicks: str(body, "trackClicks") === "on",
    allowUnknownVariables: str(body, "allowUnknownVariables") === "on",
    audience: audienceFromForm(body),
    ab: abFromForm(body),
  };
}

/**
 * The form as the create request of POST /v1/broadcasts (the form always sends every field, so
 * the update sends the same), parsed with that route's schema, and then as the broadcast
 * service's fields. A refused form throws a 400 whose message is the schema's (the field's
 * path and what is wrong), shown on the form again.
 */
export function draftRequest(v: DraftValues) {
  const parsed = createBroadcastRequestSchema.safeParse({
    name: v.name, subject: v.subject, previewText: v.previewText, fromEmail: v.fromEmail, fromName: v.fromName,
    replyTo: v.replyTo.split(",").map((s) => s.trim()).filter(Boolean),
    html: v.html, text: v.text,
    audience: audienceRequest(v.audience) satisfies AudienceRequest,
    settings: { trackOpens: v.trackOpens, trackClicks: v.trackClicks },
    allowUnknownVariables: v.allowUnknownVariables,
    abTest: abRequest(v.ab),
  });
  if (!parsed.success) throw refusal({ ...invalid(parsed.error), code: "invalid_payload", status: 400 });
  const body = parsed.data;
  return {
    name: body.name, subject: body.subject, previewText: body.previewText ?? "", fromEmail: body.fromEmail, fromName: body.fromName,
    replyTo: body.replyTo ?? [], html: body.html, text: body.text ?? "",
    // The picker's own mapping: the same fields, with a filter's JSON kept as typed (the form shows it again).
    audience: audienceRpc(v.audience),
    settings: { trackOpens: v.trackOpens, trackClicks: v.trackClicks },
    allowUnknownVariables: body.allowUnknownVariables ?? false,
    abTest: body.abTest ? abTestRpc(body.abTest) : undefined,
  };
}
