/**
 * Errors under /console are pages, not JSON: the console scope's error and not-found
 * handlers. They read status and message from the gateway's one error table
 * (bodyFromError), so a refusal means the same thing here as in the API; only the
 * rendering differs. Throw refusal({ code, message }) or let an RPC error propagate.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { bodyFromError, forWorkspace } from "@mailroom/http/errors.js";
import { consolePage, escapeHtml, plainPage, CONSOLE_PREFIX } from "./layout.js";
import { consolePageLinks } from "./views/cli-hints.js";

const TITLES: Record<number, string> = {
  400: "That did not work",
  401: "Please sign in",
  403: "Not allowed",
  404: "Not found",
  409: "That cannot be done now",
  413: "Too large",
  415: "Unsupported form",
  429: "Too many attempts",
  503: "Temporarily unavailable",
};

export function renderConsoleError(request: FastifyRequest, status: number, message: string): string {
  const title = TITLES[status] ?? (status >= 500 ? "Something went wrong" : "That did not work");
  const signIn = status === 401 ? `<p><a class="button" href="${CONSOLE_PREFIX}/sign-in">Sign in</a></p>` : "";
  const body = `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}${consolePageLinks(message)}</p>${signIn}
<p class="muted">Error ${status} · request <code>${escapeHtml(String(request.id))}</code></p>
<p><a href="${CONSOLE_PREFIX}">Back to the console</a></p>`;
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
