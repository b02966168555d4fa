import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { rpcOptions } from "../deps.js";
import { workspaceOf } from "../auth.js";
import { publicErrorBody, replyWithError, sendError } from "../errors.js";
import { emailRecordJson, parseEmail } from "../schemas/email.js";

/** POST /v1/emails: one raw or templated email -> { email: <Email record> }. */
export function registerSendEmail(app: FastifyInstance, deps: GatewayDeps): void {
  app.post("/v1/emails", async (request, reply) => {
    const parsed = parseEmail(request.body);
    if (!parsed.ok) return sendError(reply, publicErrorBody(parsed.error));
    try {
      const res = await deps.clients.email.sendEmail({ workspaceId: workspaceOf(request), email: parsed.input }, rpcOptions(request));
      return reply.code(200).send({ email: emailRecordJson(res.email!) });
    } catch (err) {
      return replyWithError(reply, err);
    }
  });
}
