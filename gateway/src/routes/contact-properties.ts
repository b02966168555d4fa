import { z } from "zod";
import { PropertyType, type ContactProperty } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { iso } from "@mailroom/http/contacts-schema.js";

/**
 * Contact properties in the official client's shape (CustomProperty). Built-ins are the
 * INTERNAL properties; custom ones are created here and keyed in contacts by `apiSlug`.
 */

const TYPES = ["SELECT", "MULTI_SELECT", "STRING", "NUMBER", "DATE", "BOOLEAN"] as const;
type PublicType = (typeof TYPES)[number];
const TYPE_TO_PB: Record<PublicType, PropertyType> = {
  SELECT: PropertyType.SELECT, MULTI_SELECT: PropertyType.MULTI_SELECT, STRING: PropertyType.STRING,
  NUMBER: PropertyType.NUMBER, DATE: PropertyType.DATE, BOOLEAN: PropertyType.BOOLEAN,
};
const DEFAULT_LIMIT = 50;

const optionSchema = z.strictObject({ id: z.string(), value: z.string(), displayName: z.string(), color: z.string() });

export const customPropertySchema = z
  .strictObject({
    id: z.string().meta({ description: "`cpr_…`; a built-in's id is its slug." }),
    apiSlug: z.string().meta({ description: "The key of the value in a contact's `properties`." }),
    displayName: z.string(),
    description: z.string().optional(),
    type: z.enum(TYPES),
    isInternal: z.boolean().meta({ description: "True for the built-in properties." }),
    typeConfig: z.strictObject({ options: z.array(optionSchema).optional(), multiple: z.boolean().optional() }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime().optional(),
    workspaceId: z.string(),
  })
  .meta({ id: "CustomProperty" });

const propertyResponseSchema = z.strictObject({ property: customPropertySchema }).meta({ id: "CustomPropertyResponse" });

const createPropertySchema = z
  .strictObject({
    displayName: z.string().min(1, "displayName is required").max(100).meta({ description: "Also gives the `apiSlug` (camelCase, made unique)." }),
    type: z.enum(TYPES),
    description: z.string().max(1000).optional(),
    typeConfig: z
      .strictObject({
        multiple: z.boolean().optional().meta({ description: "With SELECT: a MULTI_SELECT." }),
        options: z.array(z.string().min(1).max(255)).max(100).optional().meta({ description: "SELECT / MULTI_SELECT: the option values (required for those)." }),
        isRequired: z.boolean().optional().meta({ description: "Accepted and ignored." }),
        isDeletable: z.boolean().optional().meta({ description: "Accepted and ignored." }),
      })
      .optional(),
  })
  .meta({ id: "CreateCustomPropertyRequest" });

const updatePropertySchema = z
  .strictObject({ displayName: z.string().min(1).max(100).optional(), description: z.string().max(1000).optional() })
  .meta({ id: "UpdateCustomPropertyRequest" });

function propertyJson(p: ContactProperty, workspaceId: string, workspaceCreatedAt: string) {
  const type = (PropertyType[p.type] ?? "STRING") as PublicType;
  return {
    id: p.id || p.slug,
    apiSlug: p.slug,
    displayName: p.displayName || p.slug,
    ...(p.description ? { description: p.description } : {}),
    type,
    isInternal: p.builtIn,
    typeConfig: {
      ...(p.options.length ? { options: p.options.map((o) => ({ id: o.id, value: o.value, displayName: o.displayName, color: o.color })) } : {}),
      ...(type === "SELECT" || type === "MULTI_SELECT" ? { multiple: type === "MULTI_SELECT" } : {}),
    },
    createdAt: iso(p.createdAt) ?? workspaceCreatedAt,
    ...(p.updatedAt ? { updatedAt: iso(p.updatedAt)! } : {}),
    workspaceId,
  };
}

/**
 * GET /v1/contacts/properties?type=ALL|CUSTOM|INTERNAL&limit&cursor -> { properties: { items, hasMore, cursor } }
 * POST /v1/contact-properties -> 201 { property }
 * PUT /v1/contact-properties/:id -> { property }
 */
export const registerContactProperties: RouteModule = (app, deps) => {
  const workspaceCreatedAt = async (request: Parameters<typeof workspaceOf>[0]) => {
    const { workspace } = await deps.clients.accounts.getWorkspace({ workspaceId: workspaceOf(request) }, rpcOptions(request));
    return iso(workspace?.createdAt) ?? new Date(0).toISOString();
  };

  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts/properties",
    operationId: "listContactProperties",
    tags: ["Contact properties"],
    summary: "List contact properties: built-ins (INTERNAL) first, then custom ones",
    scope: "api_read",
    query: z.strictObject({
      type: z.enum(["ALL", "CUSTOM", "INTERNAL"]).optional().meta({ default: "ALL" }),
      limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: DEFAULT_LIMIT }),
      cursor: z.string().max(100).optional().meta({ description: "The `cursor` of the previous page." }),
    }),
    responses: {
      200: {
        description: "One page.",
        body: z
          .strictObject({ properties: z.strictObject({ items: z.array(customPropertySchema), hasMore: z.boolean(), cursor: z.string().nullable() }) })
          .meta({ id: "CustomPropertyList" }),
      },
      400: { description: "`invalid_request` (bad type, limit or cursor).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const workspaceId = workspaceOf(request);
      const res = await deps.clients.contacts.listContactProperties({ workspaceId }, rpcOptions(request));
      const type = query.type ?? "ALL";
      const all = res.properties.filter((p) => type === "ALL" || p.builtIn === (type === "INTERNAL"));
      let start = 0;
      if (query.cursor) {
        start = all.findIndex((p) => (p.id || p.slug) === query.cursor) + 1;
        if (start === 0) throw refusal({ code: "invalid_request", message: "cursor is not one this API returned" });
      }
      const limit = query.limit ?? DEFAULT_LIMIT;
      const page = all.slice(start, start + limit);
      const hasMore = start + limit < all.length;
      const createdAt = page.some((p) => !p.createdAt) ? await workspaceCreatedAt(request) : "";
      return reply.send({
        properties: {
          items: page.map((p) => propertyJson(p, workspaceId, createdAt)),
          hasMore,
          cursor: hasMore ? page[page.length - 1].id || page[page.length - 1].slug : null,
        },
      });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/contact-properties",
    operationId: "createContactProperty",
    tags: ["Contact properties"],
    summary: "Create a custom contact property",
    body: createPropertySchema,
    responses: {
      201: { description: "Created.", body: propertyResponseSchema },
      400: { description: "`invalid_request`, `invalid_json`, `invalid_property` (e.g. a SELECT without options).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const workspaceId = workspaceOf(request);
      const type: PublicType = body.type === "SELECT" && body.typeConfig?.multiple ? "MULTI_SELECT" : body.type;
      const res = await deps.clients.contacts.createContactProperty(
        { workspaceId, displayName: body.displayName, type: TYPE_TO_PB[type], description: body.description ?? "", options: body.typeConfig?.options ?? [] },
        rpcOptions(request),
      );
      return reply.code(201).send({ property: propertyJson(res.property!, workspaceId, "") });
    },
  });

  defineRoute(app, {
    method: "PUT",
    url: "/v1/contact-properties/:id",
    operationId: "updateContactProperty",
    tags: ["Contact properties"],
    summary: "Change a custom property's display name or description",
    description: "The API slug and the type never change.",
    params: z.object({ id: z.string().max(100) }),
    body: updatePropertySchema,
    responses: {
      200: { description: "The property.", body: propertyResponseSchema },
      400: { description: "`invalid_request`, `invalid_json`, `invalid_property` (e.g. a built-in).", body: apiErrorSchema },
      404: { description: "`property_not_found` (also another workspace's).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const workspaceId = workspaceOf(request);
      const res = await deps.clients.contacts.updateContactProperty(
        { workspaceId, propertyId: params.id, displayName: body.displayName, description: body.description },
        rpcOptions(request),
      );
      return reply.send({ property: propertyJson(res.property!, workspaceId, "") });
    },
  });
};
