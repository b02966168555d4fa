import { z } from "zod";
import { callOptionsFor } from "@mailroom/http/deps.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import type { OperationDoc } from "../openapi.js";
import { parseSignupToken } from "../signup-tokens.js";
import { escapeHtml as escape, page } from "@mailroom/http/page.js";
import { withDocs, type RouteModule } from "./route.js";

/**
 * GET /c/:token — the double opt-in confirmation link (DESIGN §9.4). A valid token makes the
 * contact SUBSCRIBED and joins the form's groups and topics, then redirects to the form's
 * `redirectUrl` or shows a confirmed page; a tampered, foreign or expired token, or one whose
 * contact is gone, is a 400 page. Following it twice is harmless.
 */
const registerConfirmRoute: RouteModule = (app, deps) => {
  app.get<{ Params: { token: string } }>("/c/:token", async (request, reply) => {
    const show = (status: number, title: string, body: string) =>
      reply.code(status).header("cache-control", "no-store").type("text/html; charset=utf-8").send(page(title, body));
    const invalid = (why: string) => show(400, "Link not valid", `<h1>This confirmation link is not valid</h1><p>${escape(why)}</p>
<p class="muted">Sign up again to get a new link.</p>`);
    const ref = parseSignupToken(deps.config, request.params.token);
    if (ref === "expired") return invalid("It has expired.");
    if (!ref) return invalid("It is incomplete or was changed. Copy the whole link from the email.");
    let res;
    try {
      res = await deps.clients.forms.confirmSignup(
        { workspaceId: ref.workspaceId, formId: ref.formId, contactId: ref.contactId, email: ref.email },
        callOptionsFor(String(request.id), 15_000),
      );
    } catch (err) {
      const body = bodyFromError(err);
      if (body.statusCode === 404) return invalid("The subscription it confirms no longer exists.");
      request.log.error({ err }, "signup confirmation failed");
      return show(503, "Try again", `<h1>We could not confirm right now</h1><p>Please follow the link again in a moment.</p>`);
    }
    request.log.info({ workspaceId: ref.workspaceId, formId: ref.formId, confirmed: res.confirmed }, "signup confirmed");
    if (res.form?.redirectUrl) return reply.redirect(res.form.redirectUrl, 303);
    return show(200, "Subscription confirmed", `<h1>Your subscription is confirmed</h1>
<p><strong>${escape(res.email)}</strong> will receive these emails. Thank you!</p>`);
  });
};

const confirmDocs: Record<string, OperationDoc> = {
  "GET /c/:token": {
    operationId: "confirmSignup",
    tags: ["Forms"],
    summary: "Confirm a double opt-in signup (the confirmation email's link)",
    description: "Makes the contact `SUBSCRIBED` and joins the form's groups and topics. Links work 7 days.",
    params: z.object({ token: z.string().meta({ description: "Signed confirmation token." }) }),
    responses: {
      200: { description: "Confirmed: a page saying so.", content: { "text/html": z.string() } },
      303: { description: "Confirmed: to the form's `redirectUrl`.", headers: { Location: { required: true, description: "The form's redirectUrl.", schema: { type: "string", format: "uri" } } } },
      400: { description: "A tampered, foreign or expired link, or one whose contact is gone: a page saying so (a 503 page asking to retry when the audience unit does not answer).", content: { "text/html": z.string() } },
    },
  },
};

export const registerConfirmSignup: RouteModule = withDocs(registerConfirmRoute, confirmDocs);
