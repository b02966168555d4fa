import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { rpcOptions } from "../deps.js";
import { workspaceOf } from "../auth.js";
import { publicErrorBody, replyWithError, sendError } from "../errors.js";
import { contactInput, contactJson, invalid, updateContactSchema } from "./contacts-schema.js";

type EmailParams = { Params: { email: string } };

/**
 * GET /v1/contacts/:email -> { contact }
 * PATCH /v1/contacts/:email -> { contact } (only the given fields change; a property set to null is removed)
 * DELETE /v1/contacts/:email -> { deleted: true, email }
 * Another workspace's contact is a 404 like a missing one.
 */
export function registerContactItem(app: FastifyInstance, deps: GatewayDeps): void {
  app.get<EmailParams>("/v1/contacts/:email", async (request, reply) => {
    try {
      const res = await deps.clients.directory.getContact({ workspaceId: workspaceOf(request), email: request.params.email }, rpcOptions(request));
      return reply.send({ contact: contactJson(res.contact!) });
    } catch (err) {
      return replyWithError(reply, err);
    }
  });

  app.patch<EmailParams>("/v1/contacts/:email", async (request, reply) => {
    const body = updateContactSchema.safeParse(request.body);
    if (!body.success) return sendError(reply, publicErrorBody(invalid(body.error)));
    try {
      const res = await deps.clients.directory.updateContact(
        { workspaceId: workspaceOf(request), contact: contactInput(request.params.email, body.data) },
        rpcOptions(request),
      );
      return reply.send({ contact: contactJson(res.contact!) });
    } catch (err) {
      return replyWithError(reply, err);
    }
  });

  app.delete<EmailParams>("/v1/contacts/:email", async (request, reply) => {
    try {
      await deps.clients.directory.deleteContact({ workspaceId: workspaceOf(request), email: request.params.email }, rpcOptions(request));
      return reply.send({ deleted: true, email: request.params.email });
    } catch (err) {
      return replyWithError(reply, err);
    }
  });
}
