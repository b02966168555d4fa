/**
 * Webhooks pages: endpoints and their event types, one endpoint's recent deliveries with
 * response codes, and the resend and test buttons. The markup is views/webhooks.ts.
 *
 *   GET  /webhooks                                   list + create form
 *   POST /webhooks                                   create (the form parsed with POST /v1/webhooks' schema)
 *   GET  /webhooks/:id?cursor=                       details, health (views/webhook-health.ts) + deliveries,
 *                                                    25 a page, newest first (ListDeliveries' keyset cursor)
 *   POST /webhooks/:id/test                          queue a TESTING_CONNECTION event
 *   POST /webhooks/:id/deliveries/:delivery/redeliver   "Retry" a failed delivery, "Resend" a delivered one
 *   POST /webhooks/:id/status                        disable (pause: deliveries are held) / enable
 *   POST /webhooks/:id/delete
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { WebhookStatus, type Webhook } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { bodyFromError, invalid, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { createWebhookSchema } from "@mailroom/http/webhooks-schema.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { all, html, str } from "../form-values.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { mayPost, seeOther, sessionOf, setFlash } from "../session.js";
import { render } from "../views/html.js";
import { DELIVERIES_PAGE, webhookListView, webhookPageView, type WebhookFormValues } from "../views/webhooks.js";

const WEBHOOK_ID = /^wh_[0-9a-z]{26}$/;
const DELIVERY_ID = /^whd_[0-9a-z]{26}$/;
/** What a cursor from ListDeliveries looks like (base64url); anything else is not sent on. */
const CURSOR = /^[A-Za-z0-9_-]{1,200}$/;

/** The create form's fields, as typed (shown again after a refusal). */
export const webhookFormValues = (body: unknown): WebhookFormValues =>
  ({ url: str(body, "url").trim(), displayName: str(body, "displayName").trim(), events: all(body, "events") });

export function registerWebhookPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  // Read when a request needs it: registering the pages touches no service client.
  const rpc = () => deps.clients.webhooks;
  const editable = (request: FastifyRequest) => {
    if (!sessionOf(request).canEdit) throw refusal({ code: "forbidden", status: 403, message: "This console session is read only (api_read key)." });
  };
  const load = async (request: FastifyRequest, id: string): Promise<Webhook> => {
    if (!WEBHOOK_ID.test(id)) throw refusal({ code: "webhook_not_found", status: 404, message: "No webhook with this id exists in the workspace." });
    const { webhook } = await rpc().getWebhook({ workspaceId: sessionOf(request).workspaceId, id }, rpcOptions(request));
    if (!webhook) throw refusal({ code: "webhook_not_found", status: 404, message: "No webhook with this id exists in the workspace." });
    return webhook;
  };

  const listPage = async (request: FastifyRequest, flash?: Flash, values: WebhookFormValues = { url: "", displayName: "", events: [] }) => {
    const session = sessionOf(request);
    const { webhooks } = await rpc().listWebhooks({ workspaceId: session.workspaceId }, rpcOptions(request));
    const csrf = mayPost(session, "/console/webhooks") ? csrfField(session) : undefined;
    return consolePage({ title: "Webhooks", session, active: "webhooks", flash, body: render(webhookListView(webhooks, csrf, values)) });
  };

  scope.get("/webhooks", async (request, reply) => html(reply, await listPage(request, request.consoleFlash)));

  scope.post("/webhooks", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const values = webhookFormValues(request.body);
    const parsed = createWebhookSchema.safeParse(values);
    if (!parsed.success) return html(reply, await listPage(request, { kind: "error", message: invalid(parsed.error).message }, values), 400);
    try {
      const { webhook } = await rpc().createWebhook({ workspaceId: session.workspaceId, ...parsed.data }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "Webhook added. Use the signing secret below to verify deliveries." });
      return seeOther(reply, consoleUrl(`/webhooks/${webhook!.id}`));
    } catch (err) {
      const e = bodyFromError(err);
      if (e.statusCode >= 500) throw err;
      return html(reply, await listPage(request, { kind: "error", message: e.message }, values), e.statusCode);
    }
  });

  scope.get<{ Params: { id: string }; Querystring: { cursor?: string } }>("/webhooks/:id", async (request, reply) => {
    const session = sessionOf(request);
    const w = await load(request, request.params.id);
    const cursor = typeof request.query.cursor === "string" ? request.query.cursor : "";
    if (cursor && !CURSOR.test(cursor)) throw refusal({ code: "invalid_cursor", status: 400, message: "This page of deliveries does not exist: start again from the newest." });
    const opts = rpcOptions(request);
    // The last 200 (the most the service answers) for the health and per-event summaries; the table pages 25 at a time.
    const [{ deliveries: recent }, page] = await Promise.all([
      rpc().listDeliveries({ workspaceId: session.workspaceId, webhookId: w.id, limit: 200 }, opts),
      rpc().listDeliveries({ workspaceId: session.workspaceId, webhookId: w.id, limit: DELIVERIES_PAGE, cursor }, opts),
    ]);
    const body = webhookPageView({
      webhook: w, recent, deliveries: page.deliveries, nextCursor: page.nextCursor, cursor, csrf: csrfField(session), now: new Date(),
      mayRedeliver: mayPost(session, "/console/webhooks/:id/deliveries/:delivery/redeliver"),
      // Test, disable/enable and delete share one rule (roles.ts); the signing secret goes with them.
      manages: mayPost(session, "/console/webhooks/:id/test"),
    });
    return html(reply, consolePage({ title: w.displayName || "Webhook", session, active: "webhooks", flash: request.consoleFlash, body: render(body) }));
  });

  /** Runs a webhook action and comes back to its page with what happened. */
  const action = (path: string, run: (request: FastifyRequest<{ Params: { id: string; delivery?: string } }>, w: Webhook) => Promise<string>, back?: string) =>
    scope.post<{ Params: { id: string; delivery?: string } }>(path, async (request, reply) => {
      editable(request);
      const w = await load(request, request.params.id);
      try {
        setFlash(reply, { kind: "ok", message: await run(request, w) });
      } catch (err) {
        const e = bodyFromError(err);
        if (e.statusCode >= 500) throw err;
        setFlash(reply, { kind: "error", message: e.message });
      }
      return seeOther(reply, back ?? consoleUrl(`/webhooks/${w.id}`));
    });

  action("/webhooks/:id/test", async (request, w) => {
    await rpc().sendTestEvent({ workspaceId: sessionOf(request).workspaceId, id: w.id }, rpcOptions(request));
    return "Test event queued: it appears below as TESTING_CONNECTION once tried (refresh).";
  });
  action("/webhooks/:id/deliveries/:delivery/redeliver", async (request, w) => {
    const id = request.params.delivery ?? "";
    if (!DELIVERY_ID.test(id)) throw refusal({ code: "delivery_not_found", status: 404, message: "The webhook has no delivery with this id." });
    await rpc().redeliverDelivery({ workspaceId: sessionOf(request).workspaceId, webhookId: w.id, deliveryId: id }, rpcOptions(request));
    return "Delivery queued again: it is sent now, with a fresh retry schedule.";
  });
  action("/webhooks/:id/status", async (request, w) => {
    const to = str(request.body, "status") === "ACTIVE" ? WebhookStatus.ACTIVE : WebhookStatus.PAUSED;
    await rpc().updateWebhook({ workspaceId: sessionOf(request).workspaceId, id: w.id, status: to }, rpcOptions(request));
    return to === WebhookStatus.ACTIVE ? "Webhook enabled: held deliveries go out now." : "Webhook disabled: deliveries are held until you enable it.";
  });
  scope.post<{ Params: { id: string } }>("/webhooks/:id/delete", async (request, reply) => {
    editable(request);
    const w = await load(request, request.params.id);
    await rpc().deleteWebhook({ workspaceId: sessionOf(request).workspaceId, id: w.id }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: "Webhook deleted." });
    return seeOther(reply, consoleUrl("/webhooks"));
  });
}
