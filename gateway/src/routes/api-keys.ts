import { z } from "zod";
import type { FastifyRequest } from "fastify";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ApiKey } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { iso } from "@mailroom/http/contacts-schema.js";
import { V1_KEY_ROLES, createApiKeySchema, updateApiKeySchema } from "@mailroom/http/api-keys-schema.js";

/**
 * API keys in the official client's shape (ApiKeyInfo). Roles are scopes: EDITOR = `api_user`
 * (read, change, send), VIEWER = `api_read` (the reading endpoints only). A key manages the
 * keys of its own workspace only: another workspace id in the path is a 404. The official
 * client knows these two roles only, so `ADMIN` here is a 400 on `role`; ADMIN keys (owned by
 * an OWNER or ADMIN member, for GET /v1/audit-log) come from `npx mailroom key create --role ADMIN --owner`.
 */

const ROLES = V1_KEY_ROLES;

const apiKeySchema = z
  .strictObject({
    id: z.string().regex(/^key_/),
    displayName: z.string(),
    role: z.enum(ROLES),
    status: z.enum(["ACTIVE", "ARCHIVED"]).meta({ description: "ARCHIVED: revoked." }),
    secretKey: z.string().optional().meta({ description: "The key itself: only in the answer that created it (it is stored hashed)." }),
    prefix: z.string().meta({ description: "The key's non-secret start, to recognise it." }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime().optional(),
    lastUsedAt: z.iso.datetime().optional().meta({ description: "When the key last authenticated, to the minute (recorded at most once a minute); absent: never since this was recorded." }),
    workspaceId: z.string(),
  })
  .meta({ id: "ApiKeyInfo" });

const apiKeyResponseSchema = z.strictObject({ apiKey: apiKeySchema }).meta({ id: "ApiKeyResponse" });
const workspaceParams = z.object({ workspaceId: z.string().max(100).meta({ description: "Must be the calling key's workspace (else 404)." }) });
const keyParams = z.object({ ...workspaceParams.shape, apiKeyId: z.string().max(100) });

function apiKeyJson(k: ApiKey, secretKey?: string) {
  return {
    id: k.id,
    displayName: k.name,
    // An ADMIN key (owned, created with the CLI) changes and sends like an EDITOR in this shape.
    role: (k.role === "EDITOR" || k.role === "ADMIN" ? "EDITOR" : "VIEWER") as (typeof ROLES)[number],
    status: (k.revokedAt ? "ARCHIVED" : "ACTIVE") as "ACTIVE" | "ARCHIVED",
    ...(secretKey ? { secretKey } : {}),
    prefix: k.prefix,
    createdAt: iso(k.createdAt)!,
    ...(k.updatedAt ? { updatedAt: iso(k.updatedAt)! } : {}),
    ...(k.lastUsedAt ? { lastUsedAt: iso(k.lastUsedAt)! } : {}),
    workspaceId: k.workspaceId,
  };
}

/** The path's workspace must be the key's own: another one is answered as if it did not exist. */
function ownWorkspace(request: FastifyRequest, workspaceId: string): string {
  const own = workspaceOf(request);
  if (workspaceId !== own) throw refusal({ code: "not_found", message: `Workspace ${workspaceId.slice(0, 100)} not found` });
  return own;
}

/**
 * GET /v1/api-keys/check -> { status: "SUCCEED", displayName, role }
 * GET /v1/api-keys/current -> { apiKey }
 * GET /v1/workspaces/:workspaceId/api-keys?startAt&sort&limit -> { apiKeys: { items, hasMore, startAt? } }
 * POST /v1/workspaces/:workspaceId/api-keys -> 201 { apiKey } (with secretKey, once)
 * POST /v1/workspaces/:workspaceId/api-keys/:apiKeyId -> { apiKey }
 * DELETE /v1/workspaces/:workspaceId/api-keys/:apiKeyId -> { apiKey, isDeleted: true }
 */
export const registerApiKeys: RouteModule = (app, deps) => {
  const currentKey = async (request: FastifyRequest) =>
    (await deps.clients.accounts.getApiKey({ workspaceId: workspaceOf(request), keyId: request.auth!.keyId }, rpcOptions(request))).apiKey!;

  defineRoute(app, {
    method: "GET",
    url: "/v1/api-keys/check",
    operationId: "checkApiKey",
    tags: ["API keys"],
    summary: "Check the calling key",
    description: "An invalid key is a 401, never a body saying so.",
    scope: "api_read",
    responses: {
      200: {
        description: "The key is valid.",
        body: z.strictObject({ status: z.literal("SUCCEED"), displayName: z.string(), role: z.enum(ROLES) }).meta({ id: "ApiKeyCheck" }),
      },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply) => {
      const key = apiKeyJson(await currentKey(request));
      return reply.send({ status: "SUCCEED", displayName: key.displayName, role: key.role });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/v1/api-keys/current",
    operationId: "getCurrentApiKey",
    tags: ["API keys"],
    summary: "The calling key",
    scope: "api_read",
    responses: { 200: { description: "The key (never its secret).", body: apiKeyResponseSchema }, ...API_KEY_RESPONSES },
    handler: async (request, reply) => reply.send({ apiKey: apiKeyJson(await currentKey(request)) }),
  });

  defineRoute(app, {
    method: "GET",
    url: "/v1/workspaces/:workspaceId/api-keys",
    operationId: "listApiKeys",
    tags: ["API keys"],
    summary: "List the workspace's keys (revoked ones too), by creation time",
    scope: "api_read",
    params: workspaceParams,
    query: z.strictObject({
      startAt: z.iso.datetime({ offset: true }).optional().meta({ description: "Start at keys created at (`createdAt.desc`: or before; `asc`: or after) this time; the previous page's `startAt`." }),
      sort: z.enum(["createdAt.desc", "createdAt.asc"]).optional().meta({ default: "createdAt.desc" }),
      limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: 100 }),
    }),
    responses: {
      200: {
        description: "One page.",
        body: z
          .strictObject({ apiKeys: z.strictObject({ items: z.array(apiKeySchema), hasMore: z.boolean(), startAt: z.iso.datetime().optional() }) })
          .meta({ id: "ApiKeyList" }),
      },
      400: { description: "`invalid_request`.", body: apiErrorSchema },
      404: { description: "`not_found`: not the calling key's workspace.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      const workspaceId = ownWorkspace(request, params.workspaceId);
      const res = await deps.clients.accounts.listApiKeys(
        {
          workspaceId,
          limit: query.limit ?? 100,
          oldestFirst: query.sort === "createdAt.asc",
          ...(query.startAt ? { startAt: timestampFromDate(new Date(query.startAt)) } : {}),
        },
        rpcOptions(request),
      );
      return reply.send({
        apiKeys: { items: res.apiKeys.map((k) => apiKeyJson(k)), hasMore: res.hasMore, ...(res.nextStartAt ? { startAt: iso(res.nextStartAt)! } : {}) },
      });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/workspaces/:workspaceId/api-keys",
    operationId: "createApiKey",
    tags: ["API keys"],
    summary: "Create a key; its secret is in this answer only",
    params: workspaceParams,
    body: createApiKeySchema,
    responses: {
      201: { description: "Created, with `secretKey`.", body: apiKeyResponseSchema },
      400: { description: "`invalid_request`, `invalid_json`.", body: apiErrorSchema },
      404: { description: "`not_found`: not the calling key's workspace.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const workspaceId = ownWorkspace(request, params.workspaceId);
      const res = await deps.clients.accounts.createApiKey({ workspaceId, name: body.displayName, role: body.role }, rpcOptions(request));
      return reply.code(201).send({ apiKey: apiKeyJson(res.apiKey!, res.plainKey) });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/workspaces/:workspaceId/api-keys/:apiKeyId",
    operationId: "updateApiKey",
    tags: ["API keys"],
    summary: "Rename a key or change its role",
    params: keyParams,
    body: updateApiKeySchema,
    responses: {
      200: { description: "The key.", body: apiKeyResponseSchema },
      400: { description: "`invalid_request`, `invalid_json`.", body: apiErrorSchema },
      404: { description: "`not_found` (another workspace) or `api_key_not_found`.", body: apiErrorSchema },
      409: { description: "`api_key_revoked`: a revoked key cannot change.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const workspaceId = ownWorkspace(request, params.workspaceId);
      const res = await deps.clients.accounts.updateApiKey({ workspaceId, keyId: params.apiKeyId, name: body.displayName, role: body.role }, rpcOptions(request));
      return reply.send({ apiKey: apiKeyJson(res.apiKey!) });
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/v1/workspaces/:workspaceId/api-keys/:apiKeyId",
    operationId: "deleteApiKey",
    tags: ["API keys"],
    summary: "Revoke a key (it shows as ARCHIVED)",
    params: keyParams,
    responses: {
      200: {
        description: "Revoked (again: the same answer).",
        body: z.strictObject({ apiKey: apiKeySchema, isDeleted: z.literal(true) }).meta({ id: "ApiKeyDeleted" }),
      },
      404: { description: "`not_found` (another workspace) or `api_key_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const workspaceId = ownWorkspace(request, params.workspaceId);
      const res = await deps.clients.accounts.revokeApiKey({ workspaceId, keyId: params.apiKeyId }, rpcOptions(request));
      return reply.send({ apiKey: apiKeyJson(res.apiKey!), isDeleted: true });
    },
  });
};
