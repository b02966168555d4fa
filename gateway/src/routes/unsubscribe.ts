import type { FastifyReply, FastifyRequest } from "fastify";
import { MailEventType } from "../../../gen/mailroom/events/v1/events_pb.js";
import { SuppressionReason } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import { parseRecipientToken, type RecipientRef } from "../../../services/renderer/src/tokens.js";
import type { GatewayDeps } from "../deps.js";
import type { RouteModule } from "./index.js";
import { publicErrorBody, sendError } from "../errors.js";
import { recordEvent } from "./tracking.js";

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title: string, inner: string) => `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>${escape(title)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
button{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:6px;background:#222;color:#fff;cursor:pointer}</style>
</head><body>${inner}</body></html>`;

async function unsubscribe(deps: GatewayDeps, request: FastifyRequest, r: RecipientRef): Promise<void> {
  const headers = { "x-request-id": String(request.id) };
  await deps.clients.directory.addSuppression(
    { workspaceId: r.workspaceId, email: r.email, reason: SuppressionReason.UNSUBSCRIBED, detail: `unsubscribed from ${r.contentId}` },
    { headers },
  );
  // The contact (when there is one) shows as unsubscribed too; the suppression is what guards sends.
  await deps.clients.directory
    .updateContact({ workspaceId: r.workspaceId, contact: { email: r.email, subscribed: false } }, { headers })
    .catch(() => undefined);
  recordEvent(deps, request, MailEventType.UNSUBSCRIBED, r);
}

/**
 * Unsubscribe links. GET shows a confirmation page (mail scanners that prefetch links
 * must not unsubscribe anyone); POST unsubscribes at once — the RFC 8058 one-click
 * request from the mailbox provider (`List-Unsubscribe=One-Click`) or the page's button.
 */
export const registerUnsubscribe: RouteModule = (app, deps) => {
  app.register(async (scope) => {
    // One-click requests are form-encoded; the body itself carries nothing we need.
    scope.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 4096 }, (_req, body, done) => done(null, body));
    scope.addContentTypeParser("multipart/form-data", { parseAs: "string", bodyLimit: 4096 }, (_req, body, done) => done(null, body));

    const recipientOr404 = (request: FastifyRequest<{ Params: { token: string } }>, reply: FastifyReply) => {
      const r = parseRecipientToken(deps.config.secret, request.params.token);
      if (!r) sendError(reply, publicErrorBody({ code: "not_found", message: "Unknown or invalid unsubscribe link" }));
      return r;
    };

    scope.get<{ Params: { token: string }; Querystring: { manage?: string } }>("/u/:token", async (request, reply) => {
      const r = recipientOr404(request, reply);
      if (!r) return reply;
      const action = `/u/${encodeURIComponent(request.params.token)}`;
      const heading = request.query.manage ? "Manage your subscription" : "Unsubscribe";
      return reply.type("text/html").send(page(heading, `<h1>${heading}</h1>
<p>Stop emails like this one to <strong>${escape(r.email)}</strong>?</p>
<form method="post" action="${action}"><button type="submit">Unsubscribe</button></form>`));
    });

    scope.post<{ Params: { token: string } }>("/u/:token", async (request, reply) => {
      const r = recipientOr404(request, reply);
      if (!r) return reply;
      try {
        await unsubscribe(deps, request, r);
      } catch (err) {
        request.log.error({ err }, "unsubscribe failed");
        return sendError(reply, publicErrorBody({ code: "service_unavailable", message: "Could not unsubscribe right now; please try again." }));
      }
      const wantsHtml = String(request.headers.accept ?? "").includes("text/html");
      if (!wantsHtml) return reply.code(200).send({ unsubscribed: true });
      return reply.type("text/html").send(page("Unsubscribed", `<h1>You are unsubscribed</h1>
<p><strong>${escape(r.email)}</strong> will no longer receive these emails.</p>`));
    });
  });
};
