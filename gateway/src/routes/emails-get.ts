import { z } from "zod";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { EmailOutcomes, EmailRecord } from "@mailroom/proto/email/v1/email_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { EMAIL_ID } from "@mailroom/http/constants.js";
import { emailDetailJson, emailDetailSchema, emailEnvelope } from "../schemas/email.js";
import { defineRoute, type RouteModule } from "./route.js";

/** The `:id` of an email route; ids that cannot exist are a 404 like missing ones. */
export const emailIdParams = z.object({ id: z.string().meta({ description: "An email id (`trs_…`); anything else is a 404." }) });

/** Refuses an id that cannot name an email before asking the email service. */
export function checkEmailId(id: string): void {
  if (!EMAIL_ID.test(id)) throw refusal({ code: "email_not_found", message: `Email ${id.slice(0, 64)} not found` });
}

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : undefined);

/** What happened to the email (additive fields of the record; the spec's fields are unchanged). */
export function outcomesJson(o: EmailOutcomes | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {
    opens: o?.opens ?? 0,
    clicks: o?.clicks ?? 0,
    links: (o?.links ?? []).map((l) => ({ url: l.url, clicks: l.clicks, lastClickedAt: iso(l.lastClickedAt) })),
  };
  if (!o) return { ...out, events: {} };
  const dates = { openedAt: o.firstOpenedAt, lastOpenedAt: o.lastOpenedAt, clickedAt: o.firstClickedAt, lastClickedAt: o.lastClickedAt };
  for (const [name, t] of Object.entries(dates)) if (t) out[name] = iso(t);
  const events: Record<string, string> = {};
  const milestones = {
    deliveredAt: o.deliveredAt,
    bouncedAt: o.bouncedAt,
    failedAt: o.failedAt,
    complainedAt: o.complainedAt,
    unsubscribedAt: o.unsubscribedAt,
  };
  for (const [name, t] of Object.entries(milestones)) if (t) events[name] = iso(t)!;
  if (o.bounceType) events.bounceType = o.bounceType;
  out.events = events;
  if (o.lastEvent && o.lastEventAt) out.lastEvent = { type: o.lastEvent, at: iso(o.lastEventAt) };
  return out;
}

const at = (description: string) => z.iso.datetime().optional().meta({ description });
const outcomeFields = {
  opens: z.number().int().min(0).meta({ description: "Opens of the tracking pixel, repeats included (0 when open tracking is off)." }),
  openedAt: at("First open."),
  lastOpenedAt: at("Latest open."),
  clicks: z.number().int().min(0).meta({ description: "Clicks on tracked links, repeats included." }),
  clickedAt: at("First click."),
  lastClickedAt: at("Latest click."),
  links: z
    .array(z.strictObject({ url: z.string(), clicks: z.number().int().min(1), lastClickedAt: z.iso.datetime() }))
    .meta({ description: "Clicks per link, most clicked first." }),
  events: z
    .strictObject({
      deliveredAt: at("Accepted by the relay or the receiving server (status DELIVERED)."),
      bouncedAt: at("First bounce."),
      bounceType: z.enum(["hard", "soft"]).optional().meta({ description: "`hard`: permanent (the address is suppressed); `soft`: transient." }),
      failedAt: at("Delivery failed for good."),
      complainedAt: at("Marked as spam."),
      unsubscribedAt: at("The recipient unsubscribed through this email."),
    })
    .meta({ description: "When each outcome first happened." }),
  lastEvent: z
    .strictObject({ type: z.enum(["DELIVERED", "DEFERRED", "BOUNCED", "FAILED", "OPENED", "CLICKED", "COMPLAINED", "UNSUBSCRIBED"]), at: z.iso.datetime() })
    .optional()
    .meta({ description: "The latest event of the email." }),
};

const [rawDetail, templatedDetail] = emailDetailSchema.options as unknown as [z.ZodObject, z.ZodObject];
export const emailWithOutcomesSchema = z
  .union([
    rawDetail.extend(outcomeFields).meta({ id: "RawEmailWithOutcomes" }),
    templatedDetail.extend(outcomeFields).meta({ id: "TemplatedEmailWithOutcomes" }),
  ])
  .meta({
    id: "EmailWithOutcomes",
    description: "The email record with its current status, plus what happened to it: opens, clicks per link, delivery, bounces, complaints and unsubscribes (each event counted once).",
  });

/** The email as GET /v1/emails/:id answers it (and each item of GET /v1/emails). */
export const emailWithOutcomesJson = (r: EmailRecord) => ({ ...emailDetailJson(r), ...outcomesJson(r.outcomes) });

/** GET /v1/emails/:id -> { email: <Email record with its current status and outcomes> }. */
export const registerGetEmail: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/emails/:id",
    operationId: "getEmail",
    tags: ["Emails"],
    summary: "Read an email, its current status and its outcomes",
    params: emailIdParams,
    responses: {
      200: { description: "The email.", body: emailEnvelope(emailWithOutcomesSchema) },
      404: { description: "`email_not_found` (also for another workspace's email).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params: { id } }) => {
      checkEmailId(id);
      const res = await deps.clients.email.getEmail({ workspaceId: workspaceOf(request), id }, rpcOptions(request));
      return reply.code(200).send({ email: emailWithOutcomesJson(res.email!) });
    },
  });
