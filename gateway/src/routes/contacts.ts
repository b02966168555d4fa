import { Code, ConnectError } from "@connectrpc/connect";
import { ContactSource, ContactStatus } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  batchContactsSchema, batchQuerySchema, batchResultSchema, contactInput, contactJson, contactListSchema, contactResponseSchema, contactSearchSchema,
  listQuerySchema, searchQuerySchema, upsertContactSchema, type ContactPropertiesInput,
} from "@mailroom/http/contacts-schema.js";

const DEFAULT_LIMIT = 20;
/** Input keys the client sends flat (the rest it sends under customProperties). */
const FLAT_KEYS = new Set(["email", "firstName", "lastName", "avatarUrl", "city", "language", "phone", "birthday", "countryCode", "status", "createdAt"]);

/** A contact of a batch request as the client built it: flat fields plus customProperties. */
function flatInput(properties: ContactPropertiesInput): Record<string, unknown> {
  const flat: Record<string, unknown> = {};
  const custom: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(properties)) (FLAT_KEYS.has(k) ? flat : custom)[k] = v;
  return Object.keys(custom).length ? { ...flat, customProperties: custom } : flat;
}

/**
 * GET /v1/contacts?limit&cursor&sort&search&status&filter&includeCount -> { contacts: { items, cursor, hasMore, totalCount? } }
 * POST /v1/contacts -> { contact }: create or update by address (upsert), 201 / 200
 * POST /v1/contacts/batch?allowPartialSuccess&includeFailedContacts&overrideCreatedAt -> the batch result
 * GET /v1/contacts/search?email= -> { contact } or { contact: null } (200 either way)
 */
export const registerContacts: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts",
    operationId: "listContacts",
    tags: ["Contacts"],
    summary: "List contacts, newest first, cursor-paginated",
    description: "Unknown query parameters are a 400 `invalid_request`.",
    scope: "api_read",
    query: listQuerySchema,
    responses: {
      200: { description: "One page.", body: contactListSchema },
      400: { description: "`invalid_request` (bad limit, unknown parameter), `invalid_cursor`, or `invalid_filter` (bad JSON or filter; the message names the path).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.contacts.listContacts(
        {
          workspaceId: workspaceOf(request),
          page: { limit: query.limit ?? DEFAULT_LIMIT, cursor: query.cursor ?? "" },
          status: query.status ? ContactStatus[query.status] : ContactStatus.UNSPECIFIED,
          search: query.search ?? "",
          newestFirst: query.sort !== "createdAt.asc",
          includeCount: query.includeCount === "true",
          filter: query.filter ?? "",
        },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({
        contacts: {
          items: res.contacts.map(contactJson),
          cursor: hasMore ? res.page!.nextCursor : null,
          hasMore,
          ...(res.totalCount !== undefined ? { totalCount: Number(res.totalCount) } : {}),
        },
      });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/contacts",
    operationId: "upsertContact",
    tags: ["Contacts"],
    summary: "Create a contact, or update the one with that address",
    description: "The official client's `create` and `upsert` (one request). An existing contact keeps what is not given; an upsert never lifts UNSUBSCRIBED or BANNED (use PUT).",
    body: upsertContactSchema,
    responses: {
      200: { description: "Updated the existing contact.", body: contactResponseSchema },
      201: { description: "Created.", body: contactResponseSchema },
      400: {
        description: "`invalid_request`, `invalid_json`, `invalid_email`, `unknown_contact_property`, `invalid_property_value`, `invalid_timezone`, `invalid_contact`.",
        body: apiErrorSchema,
      },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.contacts.upsertContact(
        { workspaceId: workspaceOf(request), contact: { ...contactInput(body.properties), source: ContactSource.PUBLIC_API } },
        rpcOptions(request),
      );
      return reply.code(res.created ? 201 : 200).send({ contact: contactJson(res.contact!) });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/contacts/batch",
    operationId: "batchContacts",
    tags: ["Contacts"],
    summary: "Create or update up to 1000 contacts",
    description: "Each contact as for `POST /v1/contacts`. Without `allowPartialSuccess=true` one invalid contact fails the whole batch: 400 `contacts_batch_invalid` with `errors` (and `failedContacts`), nothing written.",
    query: batchQuerySchema,
    body: batchContactsSchema,
    responses: {
      200: { description: "The result, also when some contacts failed (with `allowPartialSuccess`).", body: batchResultSchema },
      400: { description: "`invalid_request`, `invalid_json`, or `contacts_batch_invalid` (with `errors`, and `failedContacts` when asked).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { query, body }) => {
      const started = performance.now();
      const res = await deps.clients.contacts.batchUpsertContacts(
        {
          workspaceId: workspaceOf(request),
          contacts: body.contacts.map((c) => ({ ...contactInput(c.properties, { keepCreatedAt: query.overrideCreatedAt === "true" }), source: ContactSource.PUBLIC_API })),
          allOrNothing: query.allowPartialSuccess !== "true",
        },
        rpcOptions(request),
      );
      const failures = res.results.filter((r) => !r.ok && r.error);
      const errors = failures.map((r) => ({
        index: r.index,
        email: String(body.contacts[r.index].properties.email ?? ""),
        errors: [{ code: r.error!.code, message: r.error!.message }],
      }));
      const failedContacts = query.includeFailedContacts === "true"
        ? failures.map((r) => ({ index: r.index, contact: flatInput(body.contacts[r.index].properties), errors: [{ code: r.error!.code, message: r.error!.message }] }))
        : undefined;
      if (query.allowPartialSuccess !== "true" && failures.length) {
        throw refusal({
          code: "contacts_batch_invalid",
          message: `${failures.length} of ${body.contacts.length} contacts are invalid; nothing was written (send allowPartialSuccess=true to write the valid ones)`,
          extra: { errors, ...(failedContacts ? { failedContacts } : {}) },
        });
      }
      const written = res.results.filter((r) => r.ok && r.contact);
      const created = written.filter((r) => r.created).length;
      return reply.send({
        requestId: String(request.id),
        contacts: written.map((r) => contactJson(r.contact!)),
        summary: {
          created,
          updated: written.length - created,
          failed: failures.length,
          total: body.contacts.length,
          processingTime: Math.round(performance.now() - started),
        },
        ...(errors.length ? { errors } : {}),
        ...(failedContacts ? { failedContacts } : {}),
      });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts/search",
    operationId: "searchContact",
    tags: ["Contacts"],
    summary: "Find the contact with an address",
    description: "No such contact is `{ contact: null }` with 200.",
    scope: "api_read",
    query: searchQuerySchema,
    responses: {
      200: { description: "The contact, or null.", body: contactSearchSchema },
      400: { description: "`invalid_request` (no `email`) or `invalid_email`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      try {
        const res = await deps.clients.contacts.getContact({ workspaceId: workspaceOf(request), email: query.email }, rpcOptions(request));
        return reply.send({ contact: contactJson(res.contact!) });
      } catch (err) {
        if (err instanceof ConnectError && err.code === Code.NotFound) return reply.send({ contact: null });
        throw err;
      }
    },
  });
};
