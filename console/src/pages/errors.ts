/**
 * Errors under /console are pages, not JSON: the console scope's error and not-found
 * handlers. They read status and message from the gateway's one error table
 * (bodyFromError), so a refusal means the same thing here as in the API; only the
 * rendering differs (views/errors.ts). Throw refusal({ code, message }) or let an RPC error propagate.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { bodyFromError, forWorkspace } from "@mailroom/http/errors.js";
import { consolePage, plainPage } from "../layout.js";
import { render } from "../views/html.js";
import { errorTitle, errorView } from "../views/errors.js";

export function renderConsoleError(request: FastifyRequest, status: number, message: string): string {
  const title = errorTitle(status);
  const body = render(errorView(status, message, String(request.id)));
  const session = request.consoleSession;
  return session ? consolePage({ title, session, active: "overview", body }) : plainPage({ title, body });
}

export function consoleErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // A hint's commands name the signed-in workspace, as the API's bodies name the key's.
  const body = forWorkspace(bodyFromError(err), request.consoleSession?.workspaceId);
  if (body.statusCode >= 500 && body.code !== "service_unavailable") request.log.error({ err }, "console request failed");
  const message = body.statusCode === 500 ? "An unexpected error on our side. Try again; if it persists, report the request id below."
    : body.statusCode === 415 ? "Send this as a web form (urlencoded or multipart)."
    : body.statusCode === 413 ? "The form or upload is too large."
    : body.message;
  return reply.code(body.statusCode).type("text/html; charset=utf-8").send(renderConsoleError(request, body.statusCode, message));
}

export function consoleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply.code(404).type("text/html; charset=utf-8").send(renderConsoleError(request, 404, "There is no console page at this address."));
}
