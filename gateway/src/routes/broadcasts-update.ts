import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  abTestRpc,
  audienceRpc,
  broadcastErrorSchema,
  broadcastIdParams,
  broadcastJson,
  createBroadcastResponseSchema,
  GATING_RESPONSES,
  UNAUTHORIZED_RESPONSE,
  updateBroadcastRequestSchema,
} from "@mailroom/http/broadcasts-schema.js";

/**
 * PATCH /v1/broadcasts/:id -> { broadcast, variables, warnings? }: changes the given fields of a
 * DRAFT (the others, the audience included, keep their values) with the checks of a create.
 */
export const registerUpdateBroadcast: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "PATCH",
    url: "/v1/broadcasts/:id",
    operationId: "updateBroadcast",
    tags: ["Broadcasts"],
    summary: "Change a draft broadcast",
    description: "Only a DRAFT changes (a scheduled one: cancel it first). The answer carries `audienceCount`, the audience counted now.",
    params: broadcastIdParams,
    body: updateBroadcastRequestSchema,
    responses: {
      200: { description: "The DRAFT as changed, with `audienceCount`, its variables, and `warnings` when the HTML is over 102 KB.", body: createBroadcastResponseSchema },
      400: {
        description: "`invalid_payload`, `invalid_json`, `invalid_filter` (naming the filter's path), `audience_not_found` (an unknown group, segment or topic), `broadcast_unknown_variables`, `campaigns/invalid_from_email`, `header_injection`; an `abTest` refused: `invalid_payload` naming the field.",
        body: broadcastErrorSchema,
      },
      404: { description: "`broadcast_not_found` (also for another workspace's broadcast).", body: broadcastErrorSchema },
      409: { description: "`broadcast_not_editable`: the broadcast is not a DRAFT.", body: broadcastErrorSchema },
      ...GATING_RESPONSES,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
      413: { description: "`broadcast_html_too_large` (HTML over 512,000 bytes) or `payload_too_large` (request over 2 MB).", body: broadcastErrorSchema },
      ...UNAUTHORIZED_RESPONSE,
    },
    handler: async (request, reply, { params: { id }, body }) => {
      const workspaceId = workspaceOf(request);
      // The service replaces every editable field: the ones not given are today's.
      const { broadcast: current } = await deps.clients.broadcast.getBroadcast({ workspaceId, id }, rpcOptions(request));
      const b = current!;
      const res = await deps.clients.broadcast.updateBroadcast(
        {
          workspaceId,
          id,
          name: body.name ?? b.name,
          subject: body.subject ?? b.subject,
          previewText: body.previewText ?? b.previewText,
          fromEmail: body.fromEmail ?? b.fromEmail,
          fromName: body.fromName ?? b.fromName,
          replyTo: body.replyTo ?? b.replyTo,
          html: body.html ?? b.html,
          text: body.text ?? b.text,
          ...(body.audience ? { audience: audienceRpc(body.audience) } : {}),
          settings: {
            trackOpens: body.settings?.trackOpens ?? b.settings?.trackOpens ?? true,
            trackClicks: body.settings?.trackClicks ?? b.settings?.trackClicks ?? true,
          },
          allowUnknownVariables: body.allowUnknownVariables ?? b.allowUnknownVariables,
          // null removes the A/B test; absent keeps today's settings.
          ...(body.abTest === null
            ? {}
            : body.abTest
              ? { abTest: abTestRpc(body.abTest) }
              : b.abTest
                ? { abTest: { variants: b.abTest.variants, testShare: b.abTest.testShare, metric: b.abTest.metric, waitForSeconds: b.abTest.waitForSeconds } }
                : {}),
        },
        rpcOptions(request),
      );
      return reply.send({
        broadcast: broadcastJson(res.broadcast!),
        variables: { detected: res.variables?.detected ?? [], unknown: res.variables?.unknown ?? [] },
        ...(res.warnings.length ? { warnings: res.warnings } : {}),
      });
    },
  });
