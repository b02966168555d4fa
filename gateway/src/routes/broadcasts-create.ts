import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  abTestRpc,
  audienceRpc,
  broadcastErrorSchema,
  broadcastJson,
  createBroadcastRequestSchema,
  createBroadcastResponseSchema,
  GATING_RESPONSES,
  UNAUTHORIZED_RESPONSE,
} from "@mailroom/http/broadcasts-schema.js";

/** POST /v1/broadcasts -> 201 { broadcast, variables, warnings? }: a DRAFT, HTML stored as sent. */
export const registerCreateBroadcast: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/broadcasts",
    operationId: "createBroadcast",
    tags: ["Broadcasts"],
    summary: "Create a draft broadcast",
    description: "Stores the HTML byte for byte and reports the merge variables it found. Nothing is compiled or sent until scheduling.",
    body: createBroadcastRequestSchema,
    responses: {
      201: { description: "The DRAFT with its `audienceCount` now, its variables, and `warnings` when the HTML is over 102 KB.", body: createBroadcastResponseSchema },
      400: {
        description: "`invalid_payload` (a missing or mistyped field, an audience with none or several of all, groups, segmentId, filter), `invalid_json`, `invalid_filter` (naming the filter's path), `audience_not_found` (an unknown group, segment or topic), `broadcast_unknown_variables` (with `unknownVariables`), `campaigns/invalid_from_email` (with `allowedEmails`, `allowedDomains`), `header_injection`. An `abTest` refused: `invalid_payload` naming the field (`abTest.variants`, `abTest.variants[1]`, `abTest.testShare`, `abTest.metric`, `abTest.waitFor`).",
        body: broadcastErrorSchema,
      },
      ...GATING_RESPONSES,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
      413: { description: "`broadcast_html_too_large` (HTML over 512,000 bytes) or `payload_too_large` (request over 2 MB).", body: broadcastErrorSchema },
      ...UNAUTHORIZED_RESPONSE,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.broadcast.createBroadcast(
        {
          workspaceId: workspaceOf(request),
          name: body.name,
          subject: body.subject,
          previewText: body.previewText ?? "",
          fromEmail: body.fromEmail,
          fromName: body.fromName,
          replyTo: body.replyTo ?? [],
          html: body.html,
          text: body.text ?? "",
          audience: audienceRpc(body.audience),
          settings: body.settings ?? {},
          allowUnknownVariables: body.allowUnknownVariables ?? false,
          ...(body.abTest ? { abTest: abTestRpc(body.abTest) } : {}),
        },
        rpcOptions(request),
      );
      return reply.code(201).send({
        broadcast: broadcastJson(res.broadcast!),
        variables: { detected: res.variables?.detected ?? [], unknown: res.variables?.unknown ?? [] },
        ...(res.warnings.length ? { warnings: res.warnings } : {}),
      });
    },
  });
