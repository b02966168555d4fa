import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkReceivedEmailId, receivedEmailIdParams, receivedEmailJson, receivedEmailNotFound, receivedEmailSchema } from "@mailroom/http/received-emails-schema.js";

/** GET /v1/received-emails/:id -> { receivedEmail }: with text, html, strippedTextReply and headers. */
export const registerGetReceivedEmail: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/received-emails/:id",
    operationId: "getReceivedEmail",
    tags: ["Receiving"],
    summary: "Read a received email: its bodies, the stripped reply, headers and attachments' metadata",
    params: receivedEmailIdParams,
    responses: {
      200: { description: "The received email.", body: z.strictObject({ receivedEmail: receivedEmailSchema }).meta({ id: "ReceivedEmailResponse" }) },
      404: receivedEmailNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      checkReceivedEmailId(params.id);
      const res = await deps.clients.receiving.getReceivedEmail({ workspaceId: workspaceOf(request), id: params.id }, rpcOptions(request));
      return reply.send({ receivedEmail: receivedEmailJson(res.email!) });
    },
  });
