import { z } from "zod";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { AuditEntry } from "@mailroom/proto/accounts/v1/team_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { iso } from "@mailroom/http/contacts-schema.js";

export const AUDIT_LOG_DEFAULT_LIMIT = 50;
export const AUDIT_LOG_MAX_LIMIT = 500;

const FILTER = /^[A-Za-z0-9_.:@+-]{1,200}$/;

const auditLogQuery = z.strictObject({
  since: z.iso.datetime({ offset: true }).optional().meta({ description: "Entries at or after this time (ISO 8601)." }),
  until: z.iso.datetime({ offset: true }).optional().meta({ description: "Entries before this time (ISO 8601)." }),
  actor: z.string().regex(FILTER, "letters, digits and _.:@+- only").optional().meta({
    description: "Who acted: `key:<key id>`, `member:<member id>`, `cli:<user>`, `system`, or a bare id (any kind).",
    examples: ["key:key_01jqz8k4m2x7v9c3n5b6t1w0ye"],
  }),
  resource: z.string().regex(FILTER, "letters, digits and _.:@+- only").optional().meta({
    description: "What was changed: a type (`contact`, every contact) or `<type>:<id>`.",
    examples: ["contact", "contact:ct_01jqz8k4m2x7v9c3n5b6t1w0ye"],
  }),
  limit: z.coerce.number().int().min(1).max(AUDIT_LOG_MAX_LIMIT).optional().meta({ default: AUDIT_LOG_DEFAULT_LIMIT }),
  cursor: z.string().max(512).optional().meta({ description: "The `cursor` of the previous page." }),
});

const auditEntrySchema = z
  .strictObject({
    id: z.string().meta({ description: "`aud_…`" }),
    workspaceId: z.string(),
    at: z.iso.datetime().meta({ description: "When the change was made." }),
    actor: z.strictObject({
      kind: z.enum(["key", "member", "cli", "system"]).meta({ description: "An API key, a console member, the operator CLI, or Mailroom itself." }),
      id: z.string().meta({ description: "The key id, member id or the CLI's operating-system user; empty for `system`." }),
      label: z.string().meta({ description: "Human-readable: the key's name, the member's email, the user (may be empty)." }),
    }),
    action: z.string().meta({ description: "`<resource>.<verb>`", examples: ["contact.update", "api_key.create", "member.role_change"] }),
    resource: z.strictObject({ type: z.string(), id: z.string().meta({ description: "Empty when the change concerns many (an import, a batch send)." }) }),
    requestId: z.string().meta({ description: "The request id the change was made under (the `x-request-id` of the response)." }),
    summary: z.record(z.string(), z.string()).meta({
      description: "The changed fields (dotted paths) and their values. A secret (keys, tokens, passwords), message content or a send's recipients is named with an empty value, never copied.",
      examples: [{ "contact.firstName": "Ada", contactId: "ct_01jqz8k4m2x7v9c3n5b6t1w0ye" }],
    }),
  })
  .meta({ id: "AuditEntry" });

const auditLogList = z
  .strictObject({
    auditLog: z.strictObject({ items: z.array(auditEntrySchema), cursor: z.string().nullable(), hasMore: z.boolean() }),
  })
  .meta({ id: "AuditLogList" });

function auditEntryJson(e: AuditEntry): z.infer<typeof auditEntrySchema> {
  const kind = e.actor?.kind;
  return {
    id: e.id,
    workspaceId: e.workspaceId,
    at: iso(e.at)!,
    actor: { kind: kind === "key" || kind === "member" || kind === "cli" ? kind : "system", id: e.actor?.id ?? "", label: e.actor?.label ?? "" },
    action: e.action,
    resource: { type: e.resource?.type ?? "", id: e.resource?.id ?? "" },
    requestId: e.requestId,
    summary: { ...e.summary },
  };
}

/**
 * GET /v1/audit-log?since&until&actor&resource&limit&cursor -> { auditLog: { items, cursor, hasMore } }:
 * the workspace's changes through the API, the console and the CLI, newest first, kept a
 * year (DESIGN §9.9). Owners and admins only (roles.ts).
 */
export const registerAuditLog: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/audit-log",
    operationId: "listAuditLog",
    tags: ["Audit log"],
    summary: "List the workspace's audit log, newest first, cursor-paginated",
    description:
      "Every state change made through the API (actor `key:<id>`), the console (`member:<id>`, or the key a development session signed in with) and the CLI (`cli:<user>`): one entry per change, kept 365 days. Reads are not recorded. Owners and admins only: a key whose effective role is below ADMIN gets 403 `insufficient_role`.",
    scope: "api_read",
    query: auditLogQuery,
    errorCodes: { invalid_page_token: "invalid_cursor", invalid_actor: "invalid_request" },
    responses: {
      200: { description: "One page.", body: auditLogList },
      400: { description: "`invalid_request` (since, until, actor, resource, limit) or `invalid_cursor`.", body: apiErrorSchema },
      403: { description: "`insufficient_role`: only owners and admins read the audit log.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.team.listAuditLog(
        {
          workspaceId: workspaceOf(request),
          since: query.since ? timestampFromDate(new Date(query.since)) : undefined,
          until: query.until ? timestampFromDate(new Date(query.until)) : undefined,
          actor: query.actor ?? "",
          resource: query.resource ?? "",
          pageToken: query.cursor ?? "",
          limit: query.limit ?? AUDIT_LOG_DEFAULT_LIMIT,
        },
        rpcOptions(request),
      );
      const hasMore = res.nextPageToken !== "";
      return reply.send({ auditLog: { items: res.entries.map(auditEntryJson), cursor: hasMore ? res.nextPageToken : null, hasMore } });
    },
  });
