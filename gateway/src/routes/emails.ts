import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { SINGLE_EMAIL_BODY_LIMIT_BYTES, apiErrorSchema, invalidFromErrorSchema, invalidPayloadErrorSchema, monthlyLimitErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { emailEnvelope, emailRecordJson, emailRecordSchema, parseEmailOrRefuse, sendEmailRequestSchema } from "../schemas/email.js";
import { SingleSends } from "../single-sends.js";
import { defineRoute, type RouteModule } from "./route.js";

/** POST /v1/emails: one raw or templated email -> { email: <Email record> }. */
export const registerSendEmail: RouteModule = (app, deps) => {
  const sends = new SingleSends(deps.clients.email);
  return defineRoute(app, {
    method: "POST",
    url: "/v1/emails",
    operationId: "sendEmail",
    tags: ["Emails"],
    summary: "Send one email (raw or templated)",
    body: sendEmailRequestSchema,
    parseBody: parseEmailOrRefuse,
    bodyLimit: SINGLE_EMAIL_BODY_LIMIT_BYTES,
    responses: {
      200: { description: "Accepted: sent now (`SENT`) or scheduled (`SCHEDULED`).", body: emailEnvelope(emailRecordSchema) },
      400: {
        description: "Invalid payload (spec body with `docsUrl`), `from` not verified (spec body with the allowed lists), or a coded error: `invalid_json`, `invalid_send_at`, `send_at_out_of_range`, `template_not_found` (with `template`), `invalid_template` (the template is a layout or snippet, or its raw content does not parse), `header_injection`, `invalid_request`, and for what the email carries `header_not_allowed` (names the header), `attachment_type_not_allowed` (names the file), `attachments_too_large` (over 10 MB decoded), `too_many_recipients` (over 50 in `to`, `cc` and `bcc`), `invalid_tags` (names the tag and the rule); an attachment whose `content` is not base64 is an invalid payload naming `attachments[i].content`. Nothing is sent.",
        body: z.union([invalidPayloadErrorSchema, invalidFromErrorSchema, apiErrorSchema]),
      },
      403: { description: "Monthly sending limit reached.", body: monthlyLimitErrorSchema },
      409: { description: "`idempotency_key_reused` or `idempotency_request_in_progress`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body: email }) => {
      const bodyBytes = Number(request.headers["content-length"] ?? Infinity);
      const record = await sends.send(workspaceOf(request), email, rpcOptions(request), bodyBytes);
      return reply.code(200).send({ email: emailRecordJson(record) });
    },
  });
};
