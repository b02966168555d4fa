import { z } from "zod";
import type { FastifyRequest } from "fastify";
import type { JsonValue } from "@bufbuild/protobuf";
import { PropertyType, SuppressionReason, type Contact, type ContactEvent } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { EmailRecord } from "@mailroom/proto/email/v1/email_pb.js";
import { rpcOptions, type GatewayDeps } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { contactIdParams, contactJson, contactSchema, iso } from "@mailroom/http/contacts-schema.js";
import { emailWithOutcomesJson, emailWithOutcomesSchema } from "./emails-get.js";
import { runJson, runSchema } from "@mailroom/http/automations-schema.js";

/**
 * One contact's data (DESIGN §9.3): GET /v1/contacts/:id/export gathers everything held about
 * the person, and eraseContact is DELETE /v1/contacts/:id?erase=true. The audience unit holds
 * the contact, its events and the suppression list; the email service holds the emails sent to
 * the address; topics and groups (§9.4) its TopicService and GroupService.
 */

/** Items per call while gathering a contact's events and emails (the most one call gives). */
const PAGE = 100;

const propertySchema = z
  .strictObject({
    apiSlug: z.string(),
    displayName: z.string(),
    type: z.enum(["STRING", "NUMBER", "BOOLEAN", "DATE", "SELECT", "MULTI_SELECT"]),
    value: z.unknown().meta({ description: "The contact's value (a string, number, boolean or list of options)." }),
  })
  .meta({ id: "ContactPropertyValue" });

/** One event of a contact (GET /v1/contacts/:id/events, and the export). */
export const contactEventSchema = z
  .strictObject({
    id: z.string(),
    event: z.string(),
    messageId: z.string(),
    properties: z.record(z.string(), z.unknown()),
    timestamp: z.iso.datetime(),
    receivedAt: z.iso.datetime(),
  })
  .meta({ id: "ContactEvent" });

export const contactEventJson = (e: ContactEvent) => ({
  id: e.id, event: e.name, messageId: e.messageId, properties: e.properties ?? {}, timestamp: iso(e.timestamp)!, receivedAt: iso(e.receivedAt)!,
});

const contactExportSchema = z
  .strictObject({
    contact: contactSchema,
    properties: z.array(propertySchema).meta({ description: "The custom properties the contact has a value for, with their definitions." }),
    events: z.array(contactEventSchema).meta({ description: "Every event recorded for the contact (`POST /v1/events`), newest first." }),
    emails: z.array(emailWithOutcomesSchema).meta({ description: "Every email of the workspace to the contact's address, newest first, each as `GET /v1/emails/{id}` answers it (status and outcomes)." }),
    suppression: z
      .strictObject({
        reason: z.enum(["unsubscribed", "hard_bounce", "complaint", "manual", "imported"]),
        detail: z.string(),
        createdAt: z.iso.datetime().nullable(),
      })
      .nullable()
      .meta({ description: "The address's entry on the suppression list, or null when mail to it is not suppressed." }),
    topics: z
      .array(z.strictObject({
        id: z.string(),
        name: z.string(),
        subscribed: z.boolean().meta({ description: "Whether the contact receives the topic: its own choice, else the topic's default." }),
        explicit: z.boolean().meta({ description: "True when `subscribed` is the contact's own choice (stored on the contact); false when it is the topic's default." }),
      }))
      .meta({ description: "Every topic of the workspace with the contact's state (`GET /v1/contacts/{id}/topics`), and which of them the contact chose." }),
    groups: z
      .array(z.strictObject({
        id: z.string().meta({ description: "`grp_…`" }),
        publicId: z.string(),
        displayName: z.string().optional(),
        addedAt: z.iso.datetime().meta({ description: "When the contact joined the group." }),
      }))
      .meta({ description: "The groups the contact is in, in the order it joined them." }),
    automationRuns: z.array(runSchema).meta({ description: "The contact's runs in every automation, newest first, as `GET /v1/contacts/{id}/automation-runs` lists them." }),
  })
  .meta({ id: "ContactExport" });

const REASONS: Record<number, "unsubscribed" | "hard_bounce" | "complaint" | "manual" | "imported"> = {
  [SuppressionReason.UNSUBSCRIBED]: "unsubscribed",
  [SuppressionReason.HARD_BOUNCE]: "hard_bounce",
  [SuppressionReason.COMPLAINT]: "complaint",
  [SuppressionReason.MANUAL]: "manual",
  [SuppressionReason.IMPORTED]: "imported",
};

/** Every page of a cursor-paged list, gathered (one contact's data is small). */
async function all<T>(fetch: (cursor: string) => Promise<{ items: T[]; next: string }>): Promise<T[]> {
  const out: T[] = [];
  let cursor = "";
  do {
    const page = await fetch(cursor);
    out.push(...page.items);
    cursor = page.next;
  } while (cursor);
  return out;
}

/** Every email of the workspace to this address, newest first. */
function emailsTo(deps: GatewayDeps, request: FastifyRequest, workspaceId: string, address: string): Promise<EmailRecord[]> {
  return all(async (cursor) => {
    const res = await deps.clients.email.listEmails({ workspaceId, recipient: address, recipientExact: true, limit: PAGE, cursor }, rpcOptions(request));
    return { items: res.emails, next: res.nextCursor };
  });
}

/**
 * The erasure of one contact, by id or by address: the email service erases the emails to the
 * address (records and content), then the audience unit erases the contact (its events; the
 * address kept only as a hashed suppression, written first; CONTACT_DELETED announced). A
 * failure part-way answers an error and leaves the contact in place, so the same request
 * finishes the job. The emails are erased once more after the suppression is in place, for a
 * send accepted while the erasure ran.
 */
export async function eraseContact(deps: GatewayDeps, request: FastifyRequest, which: { contactId: string } | { email: string }) {
  const workspaceId = workspaceOf(request);
  const { contact } = await deps.clients.contacts.getContact({ workspaceId, ...which }, rpcOptions(request));
  const address = contact!.email;
  const first = await deps.clients.email.eraseRecipient({ workspaceId, email: address }, rpcOptions(request));
  const deleted = await deps.clients.contacts.deleteContact({ workspaceId, contactId: contact!.id, erase: true }, rpcOptions(request));
  const late = await deps.clients.email.eraseRecipient({ workspaceId, email: address }, rpcOptions(request)).catch((err) => {
    request.log.warn({ err, contactId: contact!.id }, "erasing the emails a second time failed (the first pass and the suppression are done)");
    return { emailsErased: 0n };
  });
  // Webhook deliveries already made about the contact carry its data in their bodies.
  const webhookDeliveries = await deps.clients.webhooks.eraseContactDeliveries({ workspaceId, contactId: contact!.id }, rpcOptions(request)).then(
    (r) => Number(r.erased),
    (err) => {
      request.log.warn({ err, contactId: contact!.id }, "erasing the contact's webhook deliveries failed (they expire with the delivery log)");
      return 0;
    },
  );
  return {
    isDeleted: true as const,
    contact: contactJson(deleted.contact!),
    erased: { emails: Number(first.emailsErased + late.emailsErased), events: Number(deleted.eventsErased), webhookDeliveries },
  };
}

/** GET /v1/contacts/:id/export -> everything held about one contact, as JSON. */
export const registerContactExport: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts/:id/export",
    operationId: "exportContact",
    tags: ["Contacts"],
    summary: "Everything held about one contact (a data export for its owner)",
    description: "The contact, its custom properties with their definitions, its events, every email of the workspace to its address with status and outcomes, the address's suppression, its topics (its own choices and the defaults), its groups and its automation runs. `DELETE /v1/contacts/{id}?erase=true` erases the same data.",
    scope: "api_read",
    params: contactIdParams,
    responses: {
      200: { description: "The contact's data.", body: contactExportSchema },
      404: { description: "`contact_not_found` (also for another workspace's contact).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const workspaceId = workspaceOf(request);
      const { contact } = await deps.clients.contacts.getContact({ workspaceId, contactId: params.id }, rpcOptions(request));
      const c: Contact = contact!;
      const [definitions, events, emails, suppression, topics, groups, runs] = await Promise.all([
        deps.clients.contacts.listContactProperties({ workspaceId }, rpcOptions(request)),
        all(async (cursor) => {
          const res = await deps.clients.contacts.listContactEvents({ workspaceId, contactId: c.id, page: { limit: PAGE, cursor } }, rpcOptions(request));
          return { items: res.events, next: res.page?.hasMore ? res.page.nextCursor : "" };
        }),
        emailsTo(deps, request, workspaceId, c.email),
        deps.clients.contacts.checkSuppression({ workspaceId, emails: [c.email] }, rpcOptions(request)),
        deps.clients.topics.getContactTopics({ workspaceId, contact: { ref: { case: "contactId", value: c.id } } }, rpcOptions(request)),
        deps.clients.groups.listContactGroups({ workspaceId, contactId: c.id }, rpcOptions(request)),
        all(async (cursor) => {
          const res = await deps.clients.automation.listRuns({ workspaceId, contactId: c.id, page: { limit: PAGE, cursor } }, rpcOptions(request));
          return { items: res.runs, next: res.page?.hasMore ? res.page.nextCursor : "" };
        }),
      ]);
      const values = (c.properties ?? {}) as Record<string, JsonValue>;
      const properties = definitions.properties
        .filter((p) => !p.builtIn && values[p.slug] !== undefined && values[p.slug] !== null)
        .map((p) => ({ apiSlug: p.slug, displayName: p.displayName || p.slug, type: PropertyType[p.type] as z.infer<typeof propertySchema>["type"], value: values[p.slug] }));
      const s = suppression.suppressed[0];
      return reply.send({
        contact: contactJson(c),
        properties,
        events: events.map(contactEventJson),
        emails: emails.map(emailWithOutcomesJson),
        suppression: s ? { reason: REASONS[s.reason] ?? "manual", detail: s.detail, createdAt: iso(s.createdAt) } : null,
        topics: topics.topics.map((t) => ({ id: t.topic!.id, name: t.topic!.name, subscribed: t.subscribed, explicit: t.explicit })),
        groups: groups.groups.map((m) => ({ id: m.group!.id, publicId: m.group!.publicId, ...(m.group!.displayName ? { displayName: m.group!.displayName } : {}), addedAt: iso(m.addedAt)! })),
        automationRuns: runs.map(runJson),
      });
    },
  });
