import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { contactEventJson, contactEventSchema, eraseContact } from "./contact-data.js";
import {
  contactDeletedSchema, contactEmailParams, contactIdParams, contactInput, contactJson, contactResponseSchema, updateContactSchema,
} from "@mailroom/http/contacts-schema.js";

/** `?erase=true` on a delete (DESIGN §9.3); without it a delete is what it always was. */
const deleteQuery = z.strictObject({
  erase: z.enum(["true", "false"]).optional().meta({
    description: "`true`: erase, not only delete. The contact's events and every email of the workspace to its address (records and stored content) are deleted too, and the address is kept only as a hashed suppression (SHA-256 of the workspace and the lower-cased address), so a later send to it is still suppressed (`FAILED` with its `reason`) while the address itself is no longer stored. CONTACT_DELETED is announced as for any delete.",
  }),
});
const ERASE_NOTE = " With `erase=true` the response adds `erased` (what went besides the contact).";

const contactEventsSchema = z
  .strictObject({ events: z.strictObject({ items: z.array(contactEventSchema), cursor: z.string().nullable(), hasMore: z.boolean() }) })
  .meta({ id: "ContactEventList" });

/**
 * GET /v1/contacts/:id -> { contact }
 * PUT /v1/contacts/:id -> { contact } (only the given properties change)
 * DELETE /v1/contacts/:id, DELETE /v1/contacts/by-email/:email -> { isDeleted: true, contact }; with
 *   ?erase=true also { erased } (contact-data.ts: events and emails gone, the address kept only hashed)
 * GET /v1/contacts/:id/events -> { events: { items, cursor, hasMore } } (a Mailroom addition)
 * Another workspace's contact is a 404 like a missing one.
 */
export const registerContactItem: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts/:id",
    operationId: "getContact",
    tags: ["Contacts"],
    summary: "Read a contact",
    scope: "api_read",
    params: contactIdParams,
    responses: {
      200: { description: "The contact.", body: contactResponseSchema },
      404: { description: "`contact_not_found` (also for another workspace's contact).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.contacts.getContact({ workspaceId: workspaceOf(request), contactId: params.id }, rpcOptions(request));
      return reply.send({ contact: contactJson(res.contact!) });
    },
  });

  defineRoute(app, {
    method: "PUT",
    url: "/v1/contacts/:id",
    operationId: "updateContact",
    tags: ["Contacts"],
    summary: "Change some properties of a contact",
    description: "Only the given properties change; null clears one; `email`, when given, must be the contact's. `status: SUBSCRIBED` resubscribes (lifts an unsubscribe, never a bounce or complaint).",
    params: contactIdParams,
    body: updateContactSchema,
    responses: {
      200: { description: "The updated contact.", body: contactResponseSchema },
      400: {
        description: "`invalid_request`, `invalid_json`, `unknown_contact_property`, `invalid_property_value`, `invalid_timezone`, `invalid_contact`.",
        body: apiErrorSchema,
      },
      404: { description: "`contact_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const res = await deps.clients.contacts.updateContact(
        { workspaceId: workspaceOf(request), contactId: params.id, contact: contactInput(body.properties) },
        rpcOptions(request),
      );
      return reply.send({ contact: contactJson(res.contact!) });
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/v1/contacts/:id",
    operationId: "deleteContact",
    tags: ["Contacts"],
    summary: "Delete a contact (or erase it, with erase=true)",
    params: contactIdParams,
    query: deleteQuery,
    responses: {
      200: { description: `Deleted: the contact as it was.${ERASE_NOTE}`, body: contactDeletedSchema },
      400: { description: "`invalid_request`: `erase` other than `true` or `false`, or an unknown parameter.", body: apiErrorSchema },
      404: { description: "`contact_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      if (query.erase === "true") return reply.send(await eraseContact(deps, request, { contactId: params.id }));
      const res = await deps.clients.contacts.deleteContact({ workspaceId: workspaceOf(request), contactId: params.id }, rpcOptions(request));
      return reply.send({ isDeleted: true, contact: contactJson(res.contact!) });
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/v1/contacts/by-email/:email",
    operationId: "deleteContactByEmail",
    tags: ["Contacts"],
    summary: "Delete the contact with an address (or erase it, with erase=true)",
    params: contactEmailParams,
    query: deleteQuery,
    responses: {
      200: { description: `Deleted: the contact as it was.${ERASE_NOTE}`, body: contactDeletedSchema },
      400: { description: "`invalid_email`, or `invalid_request` (`erase` other than `true` or `false`, an unknown parameter).", body: apiErrorSchema },
      404: { description: "`contact_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      if (query.erase === "true") return reply.send(await eraseContact(deps, request, { email: params.email }));
      const res = await deps.clients.contacts.deleteContact({ workspaceId: workspaceOf(request), email: params.email }, rpcOptions(request));
      return reply.send({ isDeleted: true, contact: contactJson(res.contact!) });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts/:id/events",
    operationId: "listContactEvents",
    tags: ["Contacts", "Events"],
    summary: "A contact's events, newest first",
    scope: "api_read",
    params: contactIdParams,
    query: z.strictObject({
      limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: 20 }),
      cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page." }),
    }),
    responses: {
      200: { description: "One page.", body: contactEventsSchema },
      404: { description: "`contact_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      const res = await deps.clients.contacts.listContactEvents(
        { workspaceId: workspaceOf(request), contactId: params.id, page: { limit: query.limit ?? 20, cursor: query.cursor ?? "" } },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({
        events: {
          items: res.events.map(contactEventJson),
          cursor: hasMore ? res.page!.nextCursor : null,
          hasMore,
        },
      });
    },
  });
};
