import { z } from "zod";
import type { Template } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { iso } from "@mailroom/http/contacts-schema.js";

/**
 * The stored templates as the official client's "transactional" resource: `name` is what a
 * templated send passes as `template`.
 */

const STATUSES = ["DRAFT", "ACTIVE", "ARCHIVED", "PAUSED"] as const;
const DEFAULT_LIMIT = 15;

const transactionalSchema = z
  .strictObject({
    id: z.string().regex(/^tpl_/),
    name: z.string().meta({ description: "What a templated send passes as `template`." }),
    displayName: z.string(),
    subject: z.string(),
    status: z.enum(STATUSES),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime().optional(),
    variables: z.record(z.string(), z.strictObject({ id: z.string(), defaultValue: z.string() })).meta({
      description: "Merge variables found in subject, preview text, HTML and text; no defaults are stored (`defaultValue` is empty).",
    }),
    bodyHtml: z.string(),
    bodyText: z.string().optional(),
    fromEmail: z.string().optional().meta({ description: "The sender of templated sends; absent: the workspace's first verified address." }),
    fromName: z.string().optional(),
    previewText: z.string().optional(),
    replyTo: z.array(z.strictObject({ email: z.string(), name: z.string().optional() })).optional(),
  })
  .meta({ id: "Transactional" });

export function transactionalJson(t: Template) {
  return {
    id: t.id,
    name: t.name,
    displayName: t.displayName || t.name,
    subject: t.subject,
    status: (STATUSES as readonly string[]).includes(t.status) ? (t.status as (typeof STATUSES)[number]) : "ACTIVE",
    createdAt: iso(t.createdAt)!,
    ...(t.updatedAt ? { updatedAt: iso(t.updatedAt)! } : {}),
    variables: Object.fromEntries(t.variables.map((name) => [name, { id: name, defaultValue: "" }])),
    bodyHtml: t.html,
    ...(t.text ? { bodyText: t.text } : {}),
    ...(t.fromEmail ? { fromEmail: t.fromEmail } : {}),
    ...(t.fromName ? { fromName: t.fromName } : {}),
    ...(t.previewText ? { previewText: t.previewText } : {}),
    ...(t.replyTo.length ? { replyTo: t.replyTo.map((r) => (r.name ? { email: r.email, name: r.name } : { email: r.email })) } : {}),
  };
}

/**
 * GET /v1/transactional?limit&cursor&sort&status -> { transactional: { items, cursor, hasMore } }
 * GET /v1/transactional/:id -> { transactional }
 */
export const registerTransactional: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/transactional",
    operationId: "listTransactional",
    tags: ["Templates"],
    summary: "List the templates as transactional emails, newest first",
    scope: "api_read",
    query: z.strictObject({
      limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: DEFAULT_LIMIT }),
      cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page." }),
      sort: z.enum(["createdAt.desc", "createdAt.asc"]).optional().meta({ default: "createdAt.desc" }),
      status: z.enum(STATUSES).optional(),
    }),
    responses: {
      200: {
        description: "One page.",
        body: z
          .strictObject({ transactional: z.strictObject({ items: z.array(transactionalSchema), cursor: z.string().nullable(), hasMore: z.boolean() }) })
          .meta({ id: "TransactionalList" }),
      },
      400: { description: "`invalid_request` or `invalid_cursor`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.templates.listTemplates(
        {
          workspaceId: workspaceOf(request),
          page: { limit: query.limit ?? DEFAULT_LIMIT, cursor: query.cursor ?? "" },
          status: query.status ?? "",
          newestFirst: query.sort !== "createdAt.asc",
          // Layouts and snippets are pieces of templates, not emails one sends.
          kind: "template",
        },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({ transactional: { items: res.templates.map(transactionalJson), cursor: hasMore ? res.page!.nextCursor : null, hasMore } });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/v1/transactional/:id",
    operationId: "getTransactional",
    tags: ["Templates"],
    summary: "Read a template as a transactional email, by id",
    scope: "api_read",
    params: z.object({ id: z.string().max(100).meta({ description: "The template's id (`tpl_…`)." }) }),
    errorCodes: { template_not_found: "not_found" },
    responses: {
      200: { description: "The template.", body: z.strictObject({ transactional: transactionalSchema }).meta({ id: "TransactionalResponse" }) },
      404: { description: "`not_found` (also another workspace's).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.templates.getTemplate({ workspaceId: workspaceOf(request), templateId: params.id }, rpcOptions(request));
      return reply.send({ transactional: transactionalJson(res.template!) });
    },
  });
};
