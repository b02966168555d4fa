import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { rpcOptions } from "../deps.js";
import { workspaceOf } from "../auth.js";
import { publicErrorBody, replyWithError, sendError } from "../errors.js";
import { EMAIL_ID, emailDetailJson } from "../schemas/email.js";

/** POST /v1/emails/:id/cancel: a SCHEDULED email becomes CANCELLED; anything else is a 409. */
export function registerCancelEmail(app: FastifyInstance, deps: GatewayDeps): void {
  // The request has no body; clients that still send Content-Type: application/json with
  // an empty body (as many do for a bare POST) are accepted rather than refused as bad JSON.
  app.register(async (scope) => {
    scope.removeContentTypeParser("application/json");
    scope.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
      const text = String(body);
      if (text.trim() === "") return done(null, undefined);
      try {
        done(null, JSON.parse(text));
      } catch (err) {
        done(Object.assign(err as Error, { statusCode: 400 }), undefined);
      }
    });

    scope.post<{ Params: { id: string } }>("/v1/emails/:id/cancel", async (request, reply) => {
      const { id } = request.params;
      if (!EMAIL_ID.test(id)) return sendError(reply, publicErrorBody({ code: "email_not_found", message: `Email ${id.slice(0, 64)} not found` }));
      try {
        const res = await deps.clients.email.cancelEmail({ workspaceId: workspaceOf(request), id }, rpcOptions(request));
        return reply.code(200).send({ email: emailDetailJson(res.email!) });
      } catch (err) {
        return replyWithError(reply, err);
      }
    });
  });
}
