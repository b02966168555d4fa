import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { HONEYPOT_FIELD } from "@mailroom/http/constants.js";
import type { JsonObject } from "@bufbuild/protobuf";
import { SignupOutcome, type FormField, type Form } from "@mailroom/proto/audience/v1/forms_pb.js";
import { callOptionsFor, type GatewayDeps } from "@mailroom/http/deps.js";
import { apiErrorSchema, bodyFromError, publicErrorBody, sendError, type PublicErrorBody } from "@mailroom/http/errors.js";
import type { OperationDoc } from "../openapi.js";
import { MemoryTokenBuckets, type TokenBuckets } from "@mailroom/kit/token-bucket.js";
import { SIGNUP_LINK_TTL_MS, signSignupToken } from "../signup-tokens.js";
import { escapeHtml as escape, page } from "@mailroom/http/page.js";
import { withDocs, type RouteModule } from "./route.js";

/**
 * Signup forms' public side (DESIGN §9.4), no API key: `GET /f/:formId` the hosted page,
 * `POST /f/:formId` a signup (form-encoded or JSON, from any site: CORS is open, preflight
 * answered), `OPTIONS /f/:formId` the preflight. A filled honeypot field is answered like a
 * success and does nothing. Signups are limited per client address and per email address.
 * With double opt-in the confirmation email goes out here, as the workspace, with the
 * signed link `/c/<token>` (forms-confirm.ts).
 */

/** Signups per client address per minute (shared by the gateways when their buckets are). */
export const DEFAULT_SUBMITS_PER_MINUTE_PER_IP = 20;
/** Signups per email address: a burst of this many, then one per 12 minutes (per gateway process). */
export const SUBMITS_PER_ADDRESS_BURST = 5;
const ADDRESS_RATE_PER_SECOND = 5 / 3600;
const BODY_LIMIT = 16 * 1024;

type FormRequest = FastifyRequest<{ Params: { formId: string } }>;

const CORS_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "POST, OPTIONS",
  "access-control-allow-headers": "Content-Type, Accept",
  "access-control-max-age": "86400",
};

/** Pages and redirects for a browser's own form post (it accepts text/html); JSON for everyone else. */
function wantsJson(request: FastifyRequest): boolean {
  if (String(request.headers["content-type"] ?? "").includes("application/json")) return true;
  return !String(request.headers.accept ?? "").includes("text/html");
}

const html = (reply: FastifyReply, title: string, body: string) =>
  reply.header("cache-control", "no-store").type("text/html; charset=utf-8").send(page(title, body));

/** A urlencoded body as an object; a name given several times is a list. */
function parseForm(body: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(body)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

function inputFor(f: FormField): string {
  const id = `f-${escape(f.name)}`;
  const name = escape(f.name);
  const req = f.required ? " required" : "";
  const label = `${escape(f.label)}${f.required ? "" : ` <span class="muted">(optional)</span>`}`;
  switch (f.type) {
    case "email":
      return `<p><label for="${id}">${label}</label><br><input id="${id}" name="email" type="email" autocomplete="email" required maxlength="320"></p>`;
    case "boolean":
      return `<p><label><input name="${name}" type="checkbox" value="true"${req}> ${label}</label></p>`;
    case "select":
      return `<p><label for="${id}">${label}</label><br><select id="${id}" name="${name}"${req}><option value=""></option>${f.options
        .map((o) => `<option value="${escape(o)}">${escape(o)}</option>`)
        .join("")}</select></p>`;
    case "multi_select":
      return `<fieldset><legend>${label}</legend>${f.options
        .map((o, i) => `<label><input name="${name}" type="checkbox" value="${escape(o)}" id="${id}-${i}"> ${escape(o)}</label><br>`)
        .join("")}</fieldset>`;
    default: {
      const type = f.type === "number" ? "number" : f.type === "date" ? "date" : "text";
      const auto = f.name === "firstName" ? ` autocomplete="given-name"` : f.name === "lastName" ? ` autocomplete="family-name"` : "";
      return `<p><label for="${id}">${label}</label><br><input id="${id}" name="${name}" type="${type}"${type === "number" ? ` step="any"` : ""}${auto}${req} maxlength="2000"></p>`;
    }
  }
}

const FORM_STYLE = `<style>input[type=email],input[type=text],input[type=number],input[type=date],select{font:inherit;width:100%;min-height:44px;padding:.4rem .6rem;border:2px solid #5a5a5a;border-radius:6px}
fieldset{border:2px solid #d4d4d4;border-radius:6px;margin:1rem 0}
.hp{position:absolute;left:-10000px;width:1px;height:1px;overflow:hidden}</style>`;

function formPage(form: Form, workspaceName: string, action: string): string {
  const fields = form.fields.map((f) => inputFor(f)).join("\n");
  return `${FORM_STYLE}<h1>${escape(form.name)}</h1>
<p class="muted">Subscribe to emails from ${escape(workspaceName)}.</p>
<form method="post" action="${escape(action)}">
${fields}
<div class="hp" aria-hidden="true"><label for="f-hp">Leave this field empty</label><input id="f-hp" name="${HONEYPOT_FIELD}" type="text" tabindex="-1" autocomplete="off"></div>
<p><button type="submit">Subscribe</button></p>
</form>${form.doubleOptIn ? `<p class="muted">We will email you a link to confirm your address.</p>` : ""}`;
}

const successMessage = (doubleOptIn: boolean) =>
  doubleOptIn ? "Check your inbox: we sent you a link to confirm your subscription." : "You are subscribed.";

const addressKey = (email: string) => `form-address:${createHash("sha256").update(email.trim().toLowerCase()).digest("hex").slice(0, 32)}`;

export interface FormLimits {
  perIpPerMinute: number;
  ipBuckets: TokenBuckets;
  addressBuckets: TokenBuckets;
}

const registerFormRoutes: RouteModule = (app, deps) => {
  const perIp = Number(process.env.MAILROOM_FORM_SUBMITS_PER_MINUTE) > 0 ? Number(process.env.MAILROOM_FORM_SUBMITS_PER_MINUTE) : DEFAULT_SUBMITS_PER_MINUTE_PER_IP;
  const limits: FormLimits = { perIpPerMinute: perIp, ipBuckets: deps.rateLimitBuckets ?? new MemoryTokenBuckets(), addressBuckets: new MemoryTokenBuckets() };
  const rpc = (request: FastifyRequest) => callOptionsFor(String(request.id), 15_000);

  app.register(async (scope) => {
    scope.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: BODY_LIMIT }, (_req, body, done) => done(null, parseForm(body as string)));

    /** An error as JSON, or as a page a browser shows (with a way back to the form). */
    const refuse = (request: FormRequest, reply: FastifyReply, body: PublicErrorBody) => {
      if (wantsJson(request) || request.method !== "POST") return sendError(reply, body);
      return html(reply.code(body.statusCode), "Signup not completed", `<h1>Signup not completed</h1>
<p>${escape(body.message)}</p><p><a href="${escape(request.url)}">Back to the form</a></p>`);
    };
    const errorBody = (err: unknown) => bodyFromError(err);

    scope.get<{ Params: { formId: string } }>("/f/:formId", async (request, reply) => {
      let res;
      try {
        res = await deps.clients.forms.getPublicForm({ formId: request.params.formId }, rpc(request));
      } catch (err) {
        const body = errorBody(err);
        if (body.statusCode >= 500) request.log.error({ err }, "form page failed");
        return html(reply.code(body.statusCode), body.statusCode === 404 ? "Form not found" : "Form unavailable", `<h1>${body.statusCode === 404 ? "This form does not exist" : "This form is unavailable right now"}</h1>
<p class="muted">${escape(body.statusCode === 404 ? "Check the link you followed." : "Please try again in a moment.")}</p>`);
      }
      return html(reply, res.form!.name, formPage(res.form!, res.workspaceName, `/f/${encodeURIComponent(request.params.formId)}`));
    });

    scope.options<{ Params: { formId: string } }>("/f/:formId", async (_request, reply) => reply.headers(CORS_HEADERS).code(204).send());

    scope.post<{ Params: { formId: string } }>("/f/:formId", { bodyLimit: BODY_LIMIT }, async (request, reply) => {
      reply.headers(CORS_HEADERS);
      const body = request.body;
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return refuse(request, reply, publicErrorBody({ code: "invalid_request", message: "Send the form's fields, form-encoded or as a JSON object" }));
      }
      const values = { ...(body as Record<string, unknown>) };
      const email = values.email;
      const honeypot = values[HONEYPOT_FIELD];
      delete values.email;
      delete values[HONEYPOT_FIELD];

      // Per client address first: it also bounds the lookups a bot can cause.
      try {
        const take = await limits.ipBuckets.take(`form-ip:${request.ip}`, limits.perIpPerMinute / 60, limits.perIpPerMinute);
        if (!take.granted) {
          const retry = Math.max(1, Math.ceil(take.waitMs / 1000));
          reply.header("retry-after", retry);
          return refuse(request, reply, publicErrorBody({ code: "rate_limited", message: `Too many signups from this address; try again in ${retry} s.` }));
        }
      } catch (err) {
        request.log.warn({ err }, "form rate limit buckets unavailable; signup let through");
      }

      let form: Form;
      const filled = typeof honeypot === "string" ? honeypot.trim() !== "" : honeypot !== undefined && honeypot !== null && honeypot !== false;
      try {
        if (filled) {
          // A bot: the same answer as a signup, nothing done.
          form = (await deps.clients.forms.getPublicForm({ formId: request.params.formId }, rpc(request))).form!;
          request.log.info({ formId: form.id }, "form honeypot filled; signup ignored");
        } else {
          if (typeof email !== "string" || !email.trim()) {
            return refuse(request, reply, publicErrorBody({ code: "invalid_email", message: "Enter your email address." }));
          }
          if (email.length > 320 || !/^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/.test(email.trim())) {
            return refuse(request, reply, publicErrorBody({ code: "invalid_email", message: `"${email.slice(0, 200)}" is not a valid email address.` }));
          }
          const take = await limits.addressBuckets.take(addressKey(email), ADDRESS_RATE_PER_SECOND, SUBMITS_PER_ADDRESS_BURST);
          if (!take.granted) {
            const retry = Math.max(1, Math.ceil(take.waitMs / 1000));
            reply.header("retry-after", retry);
            return refuse(request, reply, publicErrorBody({ code: "rate_limited", message: `Too many signups for this email address; try again in ${Math.ceil(retry / 60)} min.` }));
          }
          const res = await deps.clients.forms.submitForm(
            { formId: request.params.formId, email: email.trim(), values: values as JsonObject },
            rpc(request),
          );
          form = res.form!;
          request.log.info({ formId: form.id, workspaceId: form.workspaceId, outcome: SignupOutcome[res.outcome] }, "form signup");
          if (res.outcome === SignupOutcome.CONFIRMATION_DUE) {
            try {
              await sendConfirmation(deps, request, form, res);
            } catch (err) {
              // The email service's refusal (a limit, a suppressed address, an unverified sender)
              // is the workspace's business, not the visitor's: logged, and the visitor answered
              // as for any signup (telling them would say whether an address is suppressed). Only
              // a service that did not answer is a 503 worth retrying.
              const refused = errorBody(err).statusCode < 500;
              request.log[refused ? "warn" : "error"]({ err, formId: form.id, workspaceId: form.workspaceId }, "signup confirmation email not sent");
              if (!refused) return refuse(request, reply, publicErrorBody({ code: "service_unavailable", message: "Could not send the confirmation email right now; please try again later." }));
            }
          }
        }
      } catch (err) {
        const out = errorBody(err);
        if (out.statusCode >= 500) request.log.error({ err }, "form signup failed");
        return refuse(request, reply, out);
      }
      if (wantsJson(request)) return reply.code(200).send({ ok: true, doubleOptIn: form.doubleOptIn, message: successMessage(form.doubleOptIn) });
      if (form.redirectUrl) return reply.redirect(form.redirectUrl, 303);
      return html(reply, "Thank you", `<h1>Thank you</h1><p>${escape(successMessage(form.doubleOptIn))}</p>`);
    });
  });
};

/** The confirmation email, sent as the form's workspace: its template, or the built-in one. */
async function sendConfirmation(
  deps: GatewayDeps,
  request: FastifyRequest,
  form: Form,
  res: { contactId: string; email: string; fromEmail: string; fromName: string; workspaceName: string },
): Promise<void> {
  const token = signSignupToken(deps.config, { workspaceId: form.workspaceId, formId: form.id, contactId: res.contactId, email: res.email, expiresAt: Date.now() + SIGNUP_LINK_TTL_MS });
  const confirmUrl = `${deps.config.publicUrl.replace(/\/+$/, "")}/c/${token}`;
  const who = res.workspaceName || form.name;
  const content = form.confirmTemplate
    ? { case: "templated" as const, value: { template: form.confirmTemplate, variables: { confirmUrl, formName: form.name, email: res.email } } }
    : {
        case: "raw" as const,
        value: {
          from: res.fromEmail,
          fromName: res.fromName,
          subject: `Confirm your subscription to ${who}`,
          html: `<p>Please confirm that you want to receive emails from ${escape(who)} at ${escape(res.email)}:</p>
<p><a href="${escape(confirmUrl)}">Confirm my subscription</a></p>
<p>If you did not sign up, ignore this email: you will not be subscribed.</p>`,
          text: `Please confirm that you want to receive emails from ${who} at ${res.email}:\n\n${confirmUrl}\n\nIf you did not sign up, ignore this email: you will not be subscribed.\n`,
        },
      };
  await deps.clients.email.sendEmail(
    { workspaceId: form.workspaceId, email: { to: res.email, content, settings: { trackClicks: false, trackOpens: false } } },
    callOptionsFor(String(request.id)),
  );
}

const formIdParam = z.object({ formId: z.string().meta({ description: "The form's id (`frm_…`)." }) });
const htmlBody = z.string();
const cors = { "Access-Control-Allow-Origin": { required: true, description: "`*`: any site may post signups.", schema: { type: "string" } } };

const formDocs: Record<string, OperationDoc> = {
  "GET /f/:formId": {
    operationId: "formPage",
    tags: ["Forms"],
    summary: "The hosted signup page of a form",
    description: "An HTML page with the form's fields (and a hidden honeypot field); it posts to `POST /f/{formId}`.",
    params: formIdParam,
    responses: {
      200: { description: "The page.", content: { "text/html": htmlBody } },
      404: { description: "No such form: a page saying so (a 503 page when the audience unit does not answer).", content: { "text/html": htmlBody } },
    },
  },
  "OPTIONS /f/:formId": {
    operationId: "formPreflight",
    tags: ["Forms"],
    summary: "CORS preflight of a signup from another site",
    params: formIdParam,
    responses: { 204: { description: "Any origin may post (`Access-Control-Allow-Origin: *`, methods POST, headers Content-Type and Accept).", headers: cors } },
  },
  "POST /f/:formId": {
    operationId: "submitForm",
    tags: ["Forms"],
    summary: "Sign up through a form (form-encoded or JSON; any site may post)",
    description:
      "`email` and the form's other fields by name (a name the form does not ask is ignored; a multi-select repeats its name or takes a list). Without double opt-in the contact is subscribed and joins the form's groups and topics; with it the contact is `OPT_IN_PENDING` and gets a confirmation email (at most one per address every 10 minutes; an already subscribed contact is never downgraded and gets none). A filled `_hp` field (the honeypot) is answered like a success and does nothing. A browser's form post (`Accept` naming `text/html`, a body that is not JSON) is redirected (303) to the form's `redirectUrl` or shown a thank-you page, and its errors are pages too; every other caller is answered in JSON. Limited per client address (`MAILROOM_FORM_SUBMITS_PER_MINUTE`, default 20) and per email address (5, then one per 12 minutes): 429 `rate_limited` with `Retry-After`.",
    params: formIdParam,
    requestContent: {
      required: true,
      content: {
        "application/x-www-form-urlencoded": z.string().meta({ examples: ["email=ann%40example.com&firstName=Ann"] }),
        "application/json": z.record(z.string(), z.unknown()).meta({ examples: [{ email: "ann@example.com", firstName: "Ann" }] }),
      },
    },
    responses: {
      200: {
        description: "Signed up (or the honeypot was filled): JSON, or the thank-you page.",
        headers: cors,
        body: z.strictObject({ ok: z.literal(true), doubleOptIn: z.boolean(), message: z.string() }).meta({ id: "FormSignup" }),
        content: { "text/html": htmlBody },
      },
      303: { description: "A browser's form post: to the form's `redirectUrl`.", headers: { Location: { required: true, description: "The form's redirectUrl.", schema: { type: "string", format: "uri" } } } },
      400: { description: "`invalid_email`, `invalid_request` (a required field missing, a bad body), `invalid_property_value`. A page for a browser's form post.", body: apiErrorSchema, content: { "text/html": htmlBody } },
      404: { description: "`form_not_found`.", body: apiErrorSchema, content: { "text/html": htmlBody } },
      413: "PayloadTooLarge",
      415: "UnsupportedMediaType",
      429: { description: "`rate_limited`: too many signups from this client address or for this email address; `Retry-After` says when to retry.", body: apiErrorSchema, content: { "text/html": htmlBody } },
      503: "ServiceUnavailable",
    },
  },
};

export const registerFormPages: RouteModule = withDocs(registerFormRoutes, formDocs);
