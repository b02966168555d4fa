import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { emailDetailJson, emailDetailSchema, emailEnvelope } from "../schemas/email.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkEmailId, emailIdParams } from "./emails-get.js";

/**
 * POST /v1/emails/:id/cancel: a SCHEDULED email becomes CANCELLED; anything else is a 409.
 * The request has no body; one that still says application/json with an empty body is
 * accepted by the app's JSON parser (an empty body is no body).
 */
export const registerCancelEmail: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/emails/:id/cancel",
    operationId: "cancelEmail",
    tags: ["Emails"],
    summary: "Cancel a scheduled email",
    description: "No request body is needed (send none, or any JSON, which is ignored). A `SCHEDULED` email becomes `CANCELLED`.",
    params: emailIdParams,
    responses: {
      200: { description: "The cancelled email.", body: emailEnvelope(emailDetailSchema) },
      400: { description: "`invalid_json`: a malformed JSON body (an empty body is accepted).", body: apiErrorSchema },
      404: { description: "`email_not_found`.", body: apiErrorSchema },
      409: { description: "`email_not_cancellable`: the email is not SCHEDULED (already sent, failed or cancelled).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params: { id } }) => {
      checkEmailId(id);
      const res = await deps.clients.email.cancelEmail({ workspaceId: workspaceOf(request), id }, rpcOptions(request));
      return reply.code(200).send({ email: emailDetailJson(res.email!) });
    },
  });
