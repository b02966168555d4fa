import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { REASON_TO_PB, createSuppressionSchema, suppressionEnvelope, suppressionJson, suppressionRefusals } from "@mailroom/http/suppressions-schema.js";

/**
 * POST /v1/suppressions { email } | { domain } (reason?: manual, source?) -> 201 { suppression },
 * also when it was suppressed already (idempotent: the entry as it is; a stronger reason wins).
 */
export const registerCreateSuppression: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/suppressions",
    operationId: "createSuppression",
    tags: ["Suppressions"],
    summary: "Suppress an address or a whole domain",
    description: "Idempotent: suppressing what is suppressed already answers 201 with the entry as it is (its first reason is kept, unless the new one is `hard_bounce` or `complaint`, which outrank the others). A domain stops every address at that domain: single sends, batch items, broadcast recipients and automation sends.",
    body: createSuppressionSchema,
    responses: {
      201: { description: "Suppressed (now or already).", body: suppressionEnvelope },
      400: suppressionRefusals.invalid,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.contacts.addSuppression({
        workspaceId: workspaceOf(request),
        email: body.email ?? "",
        domain: body.domain ?? "",
        reason: REASON_TO_PB[body.reason ?? "manual"],
        source: body.source ?? "",
      }, rpcOptions(request));
      return reply.code(201).send({ suppression: suppressionJson(res.suppression!) });
    },
  });
