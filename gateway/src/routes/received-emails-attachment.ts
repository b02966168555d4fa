import { z } from "zod";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkAttachmentId, checkReceivedEmailId } from "@mailroom/http/received-emails-schema.js";
import { sendReceivedContent } from "@mailroom/http/received-content.js";

const DOWNLOAD_HEADERS = {
  "Content-Disposition": { required: true, description: "`attachment` with the file's name (an ASCII fallback and the exact name, RFC 5987).", schema: { type: "string" } },
  "Content-Length": { description: "The file's size in bytes.", schema: { type: "integer" } },
  "X-Content-Type-Options": { required: true, description: "`nosniff`.", schema: { type: "string" } },
};

/** What every download answers besides its bytes; shared with the raw message. */
export const downloadHeaders = DOWNLOAD_HEADERS;

/** GET /v1/received-emails/:id/attachments/:attachmentId -> the file's bytes, streamed. */
export const registerGetReceivedAttachment: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/received-emails/:id/attachments/:attachmentId",
    operationId: "getReceivedAttachment",
    tags: ["Receiving"],
    summary: "Download an attachment of a received email",
    description: "The file exactly as received, streamed, with its `Content-Type` (opaque `application/octet-stream` when it named no valid type) and always as a download (`Content-Disposition: attachment`), never rendered.",
    params: z.strictObject({
      id: z.string().max(100).meta({ description: "The received email (`rcv_…`)." }),
      attachmentId: z.string().max(100).meta({ description: "The attachment (`att_…`) as the email lists it." }),
    }),
    responses: {
      200: { description: "The file's bytes.", headers: DOWNLOAD_HEADERS, content: { "application/octet-stream": z.string().meta({ contentMediaType: "application/octet-stream" }) } },
      404: { description: "`received_email_not_found` or `received_attachment_not_found` (also another workspace's, or one past its retention).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      checkReceivedEmailId(params.id);
      checkAttachmentId(params.attachmentId);
      return sendReceivedContent(
        request,
        reply,
        (options) => deps.clients.receiving.getReceivedAttachment({ workspaceId: workspaceOf(request), emailId: params.id, attachmentId: params.attachmentId }, options),
        { filename: "attachment", contentType: "application/octet-stream" },
        () => refusal({ code: "received_attachment_not_found", message: `Attachment ${params.attachmentId} not found` }),
      );
    },
  });
