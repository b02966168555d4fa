/**
 * The web console under /console: server-rendered pages, no build step, no framework.
 *
 * API for page modules (one file per page area; see layout.ts, session.ts, csrf.ts):
 *
 *   export function registerXPages(scope: FastifyInstance, deps: ConsoleDeps): void
 *       (import type { ConsoleDeps } from "./deps.js"; not from this file, which imports yours)
 *       Register routes with paths RELATIVE to /console ("/broadcasts", "/broadcasts/:id").
 *       Every route there already has: a signed-in session (sessionOf(request); no session →
 *       redirect to sign-in), CSRF and Origin checks on every non-GET, cookies
 *       (@fastify/cookie), url-encoded forms (@fastify/formbody: request.body is a
 *       Record<string, string | string[]>) and multipart forms (@fastify/multipart with
 *       attachFieldsToBody "keyValues": fields as strings, files as Buffers, 10 MB at most),
 *       HTML error pages for anything thrown (refusal(...) from ../errors.js, RPC errors),
 *       security headers and no caching. Routes are not in /openapi.json.
 *       request.consoleFlash holds the flash message left by the previous POST (GET only).
 *       Check session.canEdit before changing anything (a VIEWER, or an api_read key, only looks);
 *       session.role ("OWNER" | "ADMIN" | "EDITOR" | "VIEWER") for pages of owners and admins.
 *       The route → role table is services/http/src/roles.ts (checked by requireSession).
 *       Call services with deps.clients.<service>.<rpc>({ workspaceId: session.workspaceId, … },
 *       rpcOptions(request)): the workspace always comes from the session, never the form.
 *
 * The JSON API (/v1) is unchanged: these plugins and handlers are scoped to the console.
 */
import type { FastifyInstance } from "fastify";
import fastifyCookie from "@fastify/cookie";
import fastifyFormbody from "@fastify/formbody";
import fastifyMultipart from "@fastify/multipart";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import type { AuthFailureLimiter, ConsoleDeps, ConsolePageModule } from "./deps.js";
import { SECRET_PURPOSES, deriveKey } from "@mailroom/kit/secrets.js";
import { CONSOLE_PREFIX } from "./types.js";
import { createSessionStore, requireSession, takeFlash } from "./session.js";
import { verifyCsrf } from "./csrf.js";
import { consoleErrorHandler, consoleNotFound } from "./pages/errors.js";
import { registerSignInPages } from "./pages/sign-in.js";
import { registerStatsPages } from "./pages/stats.js";
import { registerDomainPages } from "./pages/domains.js";
import { registerEmailPages } from "./pages/emails.js";
import { registerInboundPages } from "./pages/inbound.js";
import { registerReceivedPages } from "./pages/received.js";
import { registerTemplatePages } from "./pages/templates.js";
import { registerBroadcastPages } from "./pages/broadcasts.js";
import { registerContactPages } from "./pages/contacts.js";
import { registerSuppressionPages } from "./pages/suppressions.js";
import { registerWebhookPages } from "./pages/webhooks.js";
import { registerGroupPages } from "./pages/groups.js";
import { registerSegmentPages } from "./pages/segments.js";
import { registerTopicPages } from "./pages/topics.js";
import { registerFormPages } from "./pages/forms.js";
import { registerAudiencePickerRoutes } from "./pages/audience-picker.js";
import { registerAutomationPages } from "./pages/automations.js";
import { registerDeliveryPages } from "./pages/delivery.js";
import { registerInvitationPages, registerTeamPages } from "./pages/team.js";
import { registerKeyPages } from "./pages/keys.js";
import { registerSessionPages } from "./pages/sessions.js";
import { registerAuditPages } from "./pages/audit.js";
import { registerSettingsPages } from "./pages/settings.js";
import { createConsoleMail } from "./system-mail.js";

export type { ConsoleDeps, ConsolePageModule };

/** Pages behind sign-in, in nav order. */
const PAGE_MODULES: ConsolePageModule[] = [
  registerStatsPages, registerDomainPages, registerInboundPages, registerEmailPages, registerReceivedPages, registerTemplatePages,
  registerBroadcastPages, registerAudiencePickerRoutes, registerContactPages, registerSuppressionPages,
  registerGroupPages, registerSegmentPages, registerTopicPages, registerFormPages, registerAutomationPages, registerWebhookPages, registerDeliveryPages,
  registerKeyPages, registerTeamPages, registerAuditPages, registerSettingsPages, registerSessionPages,
];

/** Largest multipart upload (a contacts CSV). */
const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

// Scripts and styles are inline (no assets to serve); images may be remote (email content in
// a sandboxed frame); forms post only here; nobody may frame the console.
const CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data: https: http:; " +
  "font-src data: https:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export async function registerConsole(app: FastifyInstance, gateway: GatewayDeps, opts: { failures?: AuthFailureLimiter } = {}): Promise<void> {
  const deps: ConsoleDeps = { ...gateway, sessions: createSessionStore(gateway), failures: opts.failures, mail: createConsoleMail(gateway) };
  await app.register(async (scope) => {
    // Signed cookies (the flash message); current secret signs, the previous one still verifies.
    const cookieSecrets = [gateway.config.secret, gateway.config.previousSecret]
      .filter((s): s is string => !!s)
      .map((s) => deriveKey(s, SECRET_PURPOSES.consoleCsrf).toString("base64"));
    await scope.register(fastifyCookie, { secret: cookieSecrets });
    await scope.register(fastifyFormbody, { bodyLimit: 1024 * 1024 });
    await scope.register(fastifyMultipart, {
      attachFieldsToBody: "keyValues",
      limits: { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 100, fieldSize: 1024 * 1024 },
    });
    scope.setErrorHandler(consoleErrorHandler);
    scope.setNotFoundHandler(consoleNotFound);

    scope.addHook("onRequest", async (request, reply) => {
      reply.headers({
        "content-security-policy": CSP,
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
        "cache-control": "no-store",
      });
      request.consoleSession = await deps.sessions.load(request, reply);
      if (request.method === "GET") request.consoleFlash = takeFlash(request, reply);
    });
    scope.addHook("preHandler", verifyCsrf(gateway));

    registerSignInPages(scope, deps);
    registerInvitationPages(scope, deps);
    await scope.register(async (pages) => {
      pages.addHook("onRequest", requireSession);
      for (const register of PAGE_MODULES) register(pages, deps);
    });
  }, { prefix: CONSOLE_PREFIX });
}
