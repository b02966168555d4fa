import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { ACTIVITY_DEFAULT_LIMIT, ACTIVITY_MAX_LIMIT, ACTIVITY_TYPES, contactActivity } from "@mailroom/http/contact-activity.js";
import { contactIdParams } from "@mailroom/http/contacts-schema.js";
import { defineRoute, type RouteModule } from "./route.js";

const activityQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(ACTIVITY_MAX_LIMIT).optional().meta({ default: ACTIVITY_DEFAULT_LIMIT }),
  cursor: z.string().max(2000).optional().meta({ description: "The `cursor` of the previous page." }),
});

const activityItemSchema = z
  .strictObject({
    type: z.enum(ACTIVITY_TYPES).meta({
      description: "`email_sent`, `email_opened`, `email_clicked`, `email_bounced` (once per message and kind), `event` (a `POST /v1/events` event), " +
        "`automation_run` (a run started), `webhook_delivery` (a CONTACT_* event sent to a webhook), `contact_created`, `unsubscribed`, `suppressed` (bounce, complaint or by hand).",
    }),
    occurredAt: z.iso.datetime(),
    emailId: z.string().optional().meta({ description: "email_*: the transactional email (`trs_…`)." }),
    broadcastId: z.string().optional().meta({ description: "email_*: the broadcast (`cmp_…`)." }),
    messageId: z.string().optional().meta({ description: "email_*: the Message-ID, for mail that is neither." }),
    emailStatus: z.string().optional().meta({ description: "email_* of a transactional email: its status now (`SENT`, `DELIVERED`, `FAILED`, …)." }),
    subject: z.string().optional().meta({ description: "email_* of a transactional email: its subject (or template name)." }),
    name: z.string().optional().meta({ description: "event: its name." }),
    properties: z.record(z.string(), z.unknown()).optional().meta({ description: "event: its properties." }),
    automationId: z.string().optional(),
    runId: z.string().optional(),
    runStatus: z.string().optional().meta({ description: "automation_run: `ACTIVE`, `COMPLETED` or `EXITED`." }),
    webhookId: z.string().optional(),
    deliveryId: z.string().optional(),
    eventType: z.string().optional().meta({ description: "webhook_delivery: the event sent." }),
    deliveryState: z.string().optional().meta({ description: "webhook_delivery: `PENDING`, `SUCCEEDED`, `FAILED` or `HELD`." }),
    attempts: z.number().int().optional(),
    source: z.string().optional().meta({ description: "contact_created: where the contact came from." }),
    reason: z.string().optional().meta({ description: "unsubscribed, suppressed: why." }),
  })
  .meta({ id: "ContactActivityItem" });

const activityListSchema = z
  .strictObject({
    activity: z.strictObject({
      items: z.array(activityItemSchema).meta({ description: "Newest first." }),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "ContactActivityList" });

/**
 * GET /v1/contacts/:id/activity?limit&cursor -> { activity: { items, cursor, hasMore } }:
 * what happened to one contact, newest first (contact-activity.ts names the sources).
 * Another workspace's contact is a 404 like a missing one.
 */
export const registerContactActivity: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts/:id/activity",
    operationId: "listContactActivity",
    tags: ["Contacts"],
    summary: "A contact's activity, newest first",
    description: "Emails sent to the contact and their opens, clicks and bounces, its events, automation runs, webhook deliveries about it, its creation and its unsubscribe or suppression, merged newest first.",
    scope: "api_read",
    params: contactIdParams,
    query: activityQuery,
    responses: {
      200: { description: "One page.", body: activityListSchema },
      400: { description: "`invalid_request` (a bad limit or cursor).", body: apiErrorSchema },
      404: { description: "`contact_not_found` (also another workspace's).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      const workspaceId = workspaceOf(request);
      const options = rpcOptions(request);
      const { contact } = await deps.clients.contacts.getContact({ workspaceId, contactId: params.id }, options);
      if (!contact) throw refusal({ code: "contact_not_found", status: 404, message: "No contact with this id exists in the workspace." });
      const page = await contactActivity(deps, workspaceId, contact, { limit: query.limit, cursor: query.cursor }, options);
      return reply.send({ activity: page });
    },
  });
