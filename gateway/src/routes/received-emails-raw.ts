import { z } from "zod";
import { workspaceOf } from "../auth.js";
import { refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkReceivedEmailId, receivedEmailIdParams, receivedEmailNotFound } from "@mailroom/http/received-emails-schema.js";
import { sendReceivedContent } from "@mailroom/http/received-content.js";
import { downloadHeaders } from "./received-emails-attachment.js";

/** GET /v1/received-emails/:id/raw -> the message as received (message/rfc822), streamed. */
export const registerGetReceivedRaw: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/received-emails/:id/raw",
    operationId: "getReceivedRaw",
    tags: ["Receiving"],
    summary: "Download a received email exactly as it arrived (RFC 5322)",
    description: "Streamed as `message/rfc822`, as a download named `<id>.eml`.",
    params: receivedEmailIdParams,
    responses: {
      200: { description: "The message's bytes.", headers: downloadHeaders, content: { "message/rfc822": z.string().meta({ contentMediaType: "message/rfc822" }) } },
      404: receivedEmailNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      checkReceivedEmailId(params.id);
      return sendReceivedContent(
        request,
        reply,
        (options) => deps.clients.receiving.getReceivedRaw({ workspaceId: workspaceOf(request), emailId: params.id }, options),
        { filename: `${params.id}.eml`, contentType: "message/rfc822", fixed: true },
        () => refusal({ code: "received_email_not_found", message: `Received email ${params.id} not found` }),
      );
    },
  });
