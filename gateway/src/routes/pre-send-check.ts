import { z } from "zod";
import type { FastifyRequest } from "fastify";
import type { JsonObject } from "@bufbuild/protobuf";
import { checkJson, preSendCheckSchema } from "@mailroom/http/pre-send-check-schema.js";
import { rpcOptions, type GatewayDeps } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { invalid } from "@mailroom/http/errors.js";
import { defineRoute, type RouteModule } from "./route.js";
import { broadcastErrorSchema, broadcastIdParams, GATING_RESPONSES, UNAUTHORIZED_RESPONSE } from "@mailroom/http/broadcasts-schema.js";
import { broadcastScope } from "./broadcasts-scope.js";
import { templateNameParams } from "./templates-schema.js";

/**
 * The pre-send check (DESIGN §10.5): POST /v1/broadcasts/:id/check and POST
 * /v1/templates/:name/check. The broadcast unit renders (or is handed) the message and looks
 * at it; the gateway shapes the answer. docs/pre-send-check.md says what each check means.
 */

const checkEnvelope = z.strictObject({ check: preSendCheckSchema }).meta({ id: "PreSendCheckResponse" });

const templateCheckRequestSchema = z
  .strictObject({
    variables: z.record(z.string(), z.unknown()).nullish().meta({ description: "Sample values by name; a variable without one shows its name in brackets (`[firstName]`)." }),
  })
  .meta({ id: "TemplateCheckRequest" });

export async function checkBroadcast(deps: GatewayDeps, request: FastifyRequest, id: string) {
  const res = await deps.clients.check.checkBroadcast({ workspaceId: workspaceOf(request), id }, rpcOptions(request));
  return checkJson(res.check!);
}

/** `requireCleanCheck`: 409 `check_failed` listing the check's errors, when it has any. */
export async function assertCleanCheck(deps: GatewayDeps, request: FastifyRequest, id: string): Promise<void> {
  const { errors } = await checkBroadcast(deps, request, id);
  if (errors.length === 0) return;
  throw refusal({
    code: "check_failed",
    message: `The pre-send check found ${errors.length} error${errors.length === 1 ? "" : "s"}: ${errors.map((e) => `${e.code} (${e.where})`).join(", ")}. Nothing was scheduled.`,
    extra: { errors },
  });
}

const registerBroadcastCheck: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/broadcasts/:id/check",
    operationId: "checkBroadcast",
    tags: ["Broadcasts"],
    summary: "Check a broadcast before sending it (spam score, size, links, images, text, unsubscribe)",
    description:
      "Renders the broadcast as its audience's first contact would get it (sample values without one) and checks it: SpamAssassin's score (when `spamassassin` is on the broadcast unit's PATH or `MAILROOM_SPAMD_URL` names a spamd), the HTML against Gmail's 102 KB clipping, every link fetched (HEAD, then GET; redirects followed; 5 s each, 4 at a time, answers reused for an hour; private and loopback addresses refused, never fetched), images without alt, the image-to-text ratio, the plain-text part, the unsubscribe link, the subject and preview text lengths. Each problem is a finding in `warnings` or `errors`. Nothing is sent or stored; any status may be checked.",
    params: broadcastIdParams,
    responses: {
      200: { description: "The check.", body: checkEnvelope },
      404: { description: "`broadcast_not_found`.", body: broadcastErrorSchema },
      ...GATING_RESPONSES,
      ...API_KEY_RESPONSES,
      ...UNAUTHORIZED_RESPONSE,
    },
    handler: async (request, reply, { params: { id } }) => reply.send({ check: await checkBroadcast(deps, request, id) }),
  });

const registerTemplateCheck: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/templates/:name/check",
    operationId: "checkTemplate",
    tags: ["Templates"],
    summary: "Check a template before sending it, rendered with sample values",
    description:
      "The template rendered with `variables` (a variable without a value shows its name in brackets), then checked as `POST /v1/broadcasts/{id}/check` checks a broadcast; an unsubscribe link is not required of a transactional template (`unsubscribe.required` false).",
    params: templateNameParams,
    // `{}`, `{ variables }` or no body at all.
    requestContent: { required: false, content: { "application/json": templateCheckRequestSchema } },
    parseBody: (raw) => {
      const parsed = templateCheckRequestSchema.safeParse(raw ?? {});
      if (!parsed.success) throw refusal(invalid(parsed.error));
      return parsed.data;
    },
    errorCodes: { template_not_found: "not_found" },
    responses: {
      200: { description: "The check.", body: checkEnvelope },
      400: { description: "`invalid_request`, `invalid_json`, or `template_render_failed`.", body: apiErrorSchema },
      404: { description: "`not_found`: no such template.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const workspaceId = workspaceOf(request);
      const { template } = await deps.clients.templates.getTemplate({ workspaceId, name: params.name }, rpcOptions(request));
      const given = (body?.variables ?? {}) as JsonObject;
      // Sample values, as a broadcast's preview has them: a name without a value shows where it goes.
      const samples = Object.fromEntries((template?.variables ?? []).filter((v) => /^[A-Za-z_][\w-]*$/.test(v) && !SYSTEM_VARIABLES.has(v)).map((v) => [v, `[${v}]`]));
      const rendered = await deps.clients.templates.renderTemplate({ workspaceId, name: params.name, variables: { ...samples, ...given }, contactId: "" }, rpcOptions(request));
      const res = await deps.clients.check.checkContent(
        {
          workspaceId,
          subject: rendered.subject,
          html: rendered.html,
          text: rendered.text,
          previewText: rendered.previewText,
          fromEmail: template?.fromEmail ?? "",
          fromName: template?.fromName ?? "",
          unsubscribeRequired: false,
          textGiven: (template?.text ?? "").trim() !== "",
        },
        rpcOptions(request),
      );
      return reply.send({ check: checkJson(res.check!) });
    },
  });

/** Merge values the renderer computes itself: never sampled. */
const SYSTEM_VARIABLES = new Set(["email", "unsubscribeUrl", "manageUrl", "contactId"]);

/** Both routes; the broadcast one in the broadcasts' scope (a schema refusal is `invalid_payload`). */
export const registerPreSendCheck: RouteModule = (app, deps) => {
  broadcastScope(registerBroadcastCheck)(app, deps);
  registerTemplateCheck(app, deps);
};
