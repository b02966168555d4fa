/**
 * Webhooks pages: endpoints and their event types, one endpoint's recent deliveries with
 * response codes, and the resend and test buttons.
 *
 *   GET  /webhooks                                   list + create form
 *   POST /webhooks                                   create
 *   GET  /webhooks/:id?cursor=                       details, health (webhook-health.ts) + deliveries,
 *                                                    25 a page, newest first (ListDeliveries' keyset cursor)
 *   POST /webhooks/:id/test                          queue a TESTING_CONNECTION event
 *   POST /webhooks/:id/deliveries/:delivery/redeliver   "Retry" a failed delivery, "Resend" a delivered one
 *   POST /webhooks/:id/status                        disable (pause: deliveries are held) / enable
 *   POST /webhooks/:id/delete
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DeliveryState, WebhookStatus, type Delivery, type Webhook } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, type Flash, type Tone } from "./layout.js";
import { mayPost, seeOther, sessionOf, setFlash } from "./session.js";
import { EVENT_INFO, eventsTable } from "./webhook-events.js";
import { webhookHealthHtml } from "./views/webhook-health.js";

type Form = Record<string, unknown>;
const str = (body: unknown, name: string): string => {
  const v = (body as Form | undefined)?.[name];
  return typeof v === "string" ? v : Array.isArray(v) && typeof v[0] === "string" ? v[0] : "";
};
const all = (body: unknown, name: string): string[] => {
  const v = (body as Form | undefined)?.[name];
  return v === undefined ? [] : Array.isArray(v) ? v.map(String) : [String(v)];
};
const html = (reply: FastifyReply, page: string, status = 200) => reply.code(status).type("text/html; charset=utf-8").send(page);
const WEBHOOK_ID = /^wh_[0-9a-z]{26}$/;
const DELIVERY_ID = /^whd_[0-9a-z]{26}$/;
/** Deliveries a page of the table shows. */
export const DELIVERIES_PAGE = 25;
/** What a cursor from ListDeliveries looks like (base64url); anything else is not sent on. */
const CURSOR = /^[A-Za-z0-9_-]{1,200}$/;

// The names the webhook service accepts (services/webhooks/src/domain/model.ts; the gateway
// may not import a service's files). The service validates, so a stale list here only
// means a missing checkbox, never a wrong subscription.
const EVENT_GROUPS: Array<{ legend: string; events: string[] }> = [
  {
    legend: "Email and broadcast events",
    events: ["EMAIL_SENT", "EMAIL_DELIVERED", "EMAIL_DEFERRED", "EMAIL_BOUNCED", "EMAIL_COMPLAINED", "EMAIL_OPENED", "EMAIL_CLICKED", "EMAIL_UNSUBSCRIBED", "EMAIL_FAILED", "EMAIL_RECEIVED", "BROADCAST_STARTED", "BROADCAST_COMPLETED"],
  },
  {
    legend: "Automation events",
    events: ["AUTOMATION_RUN_STARTED", "AUTOMATION_RUN_COMPLETED", "AUTOMATION_RUN_EXITED"],
  },
  {
    legend: "Contact and workspace events",
    events: ["CONTACT_CREATED", "CONTACT_UPDATED", "CONTACT_DELETED", "CONTACT_PROPERTY_UPDATED", "CONTACT_RESUBSCRIBED", "CONTACT_UNSUBSCRIBED",
      "CONTACT_TAG_ADDED", "CONTACT_TAG_REMOVED", "WORKSPACE_BANNED", "WORKSPACE_SENDING_EMAILS_PAUSED", "WORKSPACE_TEAM_MEMBER_JOINED", "TESTING_CONNECTION"],
  },
  {
    legend: "Suppression events",
    events: ["SUPPRESSION_CREATED", "SUPPRESSION_DELETED"],
  },
];

const STATUS_TONE: Record<number, Tone> = { [WebhookStatus.ACTIVE]: "ok", [WebhookStatus.PAUSED]: "warn", [WebhookStatus.BANNED]: "bad" };
const STATE_TONE: Record<number, Tone> = { [DeliveryState.SUCCEEDED]: "ok", [DeliveryState.PENDING]: "info", [DeliveryState.FAILED]: "bad", [DeliveryState.HELD]: "warn" };
const webhookBadge = (w: Webhook) => statusBadge(WebhookStatus[w.status] ?? "UNKNOWN", STATUS_TONE[w.status] ?? "info");

function codeOf(d: Delivery): string {
  const a = d.lastAttempt;
  if (!a) return `<span class="muted">not tried yet</span>`;
  if (a.statusCode === 0) return `${statusBadge("no answer", "bad")} <span class="muted">${escapeHtml(a.error)}</span>`;
  return statusBadge(String(a.statusCode), a.statusCode >= 200 && a.statusCode < 300 ? "ok" : "bad");
}

/** Retry for a failed delivery, resend for a delivered one; queued and held ones wait their turn. */
function redeliverButton(d: Delivery, base: string, csrf: string): string {
  if (d.state === DeliveryState.PENDING) return `<span class="muted">queued</span>`;
  if (d.state === DeliveryState.HELD) return `<span class="muted">held while disabled</span>`;
  const label = d.state === DeliveryState.FAILED ? "Retry" : "Resend";
  return `<form method="post" action="${base}/deliveries/${escapeHtml(d.id)}/redeliver">${csrf}<button type="submit" class="secondary small" aria-label="${label} ${escapeHtml(d.eventType)} delivery ${escapeHtml(d.id)}">${label}</button></form>`;
}

function createForm(csrf: string, values: { url: string; displayName: string; events: string[] }): string {
  const groups = EVENT_GROUPS.map((g, gi) => `<fieldset class="field"><legend>${g.legend}</legend><div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(min(100%,15rem),1fr));gap:.25rem 1rem">${g.events.map((e, i) => {
    // Nothing produces it yet: shown, not offered (the service would refuse it).
    const unavailable = EVENT_INFO[e]?.unavailable;
    return `<div class="check"><input type="checkbox" id="ev-${gi}-${i}" name="events" value="${e}"${values.events.includes(e) && !unavailable ? " checked" : ""}${unavailable ? ` disabled aria-describedby="ev-${gi}-${i}-note"` : ""}><label for="ev-${gi}-${i}" style="font-weight:400"><code>${e}</code>${unavailable ? ` <span class="muted" id="ev-${gi}-${i}-note">(${unavailable})</span>` : ""}</label></div>`;
  }).join("")}</div></fieldset>`).join("");
  return `<form method="post" action="${consoleUrl("/webhooks")}" class="card">${csrf}
<div class="field"><label for="url">Endpoint URL</label><input id="url" name="url" type="url" required value="${escapeHtml(values.url)}" placeholder="https://example.com/hooks/mailroom" style="width:100%"></div>
<div class="field"><label for="displayName">Name (optional)</label><input id="displayName" name="displayName" value="${escapeHtml(values.displayName)}" style="width:100%"></div>
${groups}<div class="actions"><button type="submit">Add webhook</button></div></form>`;
}

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

  const listPage = async (request: FastifyRequest, flash?: Flash, values = { url: "", displayName: "", events: [] as string[] }) => {
    const session = sessionOf(request);
    const { webhooks } = await rpc().listWebhooks({ workspaceId: session.workspaceId }, rpcOptions(request));
    const rows = webhooks.map((w) => `<tr><td data-label="Endpoint"><a href="${consoleUrl(`/webhooks/${w.id}`)}">${escapeHtml(w.displayName || w.url)}</a>${w.displayName ? `<br><span class="muted">${escapeHtml(w.url)}</span>` : ""}</td>
<td data-label="Events">${w.events.map((e) => `<code>${escapeHtml(e)}</code>`).join(", ")}</td><td data-label="Status">${webhookBadge(w)}</td></tr>`).join("");
    const body = `<h1>Webhooks</h1>
${rows ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">Webhook endpoints</caption><thead><tr><th>Endpoint</th><th>Events</th><th>Status</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : `<p class="muted">No webhooks yet.</p>`}
${mayPost(session, "/console/webhooks") ? `<h2 id="add">Add a webhook</h2>${createForm(csrfField(session), values)}` : ""}`;
    return consolePage({ title: "Webhooks", session, active: "webhooks", flash, body });
  };

  scope.get("/webhooks", async (request, reply) => html(reply, await listPage(request, request.consoleFlash)));

  scope.post("/webhooks", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const values = { url: str(request.body, "url").trim(), displayName: str(request.body, "displayName").trim(), events: all(request.body, "events") };
    try {
      const { webhook } = await rpc().createWebhook({ workspaceId: session.workspaceId, ...values }, rpcOptions(request));
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
    const base = consoleUrl(`/webhooks/${w.id}`);
    const opts = rpcOptions(request);
    // The last 200 (the most the service answers) for the health and per-event summaries; the table pages 25 at a time.
    const [{ deliveries: recent }, page] = await Promise.all([
      rpc().listDeliveries({ workspaceId: session.workspaceId, webhookId: w.id, limit: 200 }, opts),
      rpc().listDeliveries({ workspaceId: session.workspaceId, webhookId: w.id, limit: DELIVERIES_PAGE, cursor }, opts),
    ]);
    const csrf = csrfField(session);
    const mayRedeliver = mayPost(session, "/console/webhooks/:id/deliveries/:delivery/redeliver");
    const rows = page.deliveries.map((d) => `<tr data-delivery="${escapeHtml(d.id)}"><td data-label="Event"><code>${escapeHtml(d.eventType)}</code></td>
<td data-label="State">${statusBadge(DeliveryState[d.state] ?? "UNKNOWN", STATE_TONE[d.state] ?? "info")}</td>
<td data-label="Response">${codeOf(d)}</td><td data-label="Attempts" class="num">${d.attempts}</td>
<td data-label="Created">${formatTime(d.createdAt && timestampDate(d.createdAt))}</td>
<td data-label="Action">${mayRedeliver ? redeliverButton(d, base, csrf) : ""}</td></tr>`).join("");
    const pager = page.nextCursor || cursor ? `<nav class="actions" aria-label="Pages of deliveries">${cursor ? `<a class="button secondary" href="${base}#deliveries-h">Newest deliveries</a>` : ""}${
      page.nextCursor ? `<a class="button secondary" rel="next" href="${consoleUrl(`/webhooks/${w.id}`, { cursor: page.nextCursor })}#deliveries-h">Older deliveries</a>` : ""}</nav>` : "";
    const paused = w.status === WebhookStatus.PAUSED;
    // Test, disable/enable and delete share one rule (roles.ts); the signing secret goes with them.
    const manages = mayPost(session, "/console/webhooks/:id/test");
    const actions = manages ? `<div class="actions">
<form method="post" action="${base}/test">${csrf}<button type="submit">Send test event</button></form>
${w.status === WebhookStatus.BANNED ? "" : `<form method="post" action="${base}/status"${paused ? "" : ` data-confirm="Disable this webhook? Its deliveries are held until you enable it again."`}>${csrf}<input type="hidden" name="status" value="${paused ? "ACTIVE" : "PAUSED"}"><button type="submit" class="secondary">${paused ? "Enable" : "Disable"}</button></form>`}
<form method="post" action="${base}/delete" data-confirm="Delete this webhook?">${csrf}<button type="submit" class="danger">Delete</button></form></div>` : "";
    const body = `<h1>${escapeHtml(w.displayName || "Webhook")} ${webhookBadge(w)}</h1>
<div class="card"><dl><dt class="muted">URL</dt><dd style="margin:0 0 .5rem"><code>${escapeHtml(w.url)}</code></dd>
${w.pausedReason ? `<dt class="muted">Paused because</dt><dd style="margin:0 0 .5rem">${escapeHtml(w.pausedReason)}</dd>` : ""}
${manages ? `<dt class="muted">Signing secret</dt><dd style="margin:0"><details><summary>Show</summary><code class="value">${escapeHtml(w.token)}</code></details>
<button type="button" class="copy secondary small" data-copy="${escapeHtml(w.token)}" hidden>Copy secret</button></dd>` : ""}</dl></div>
${webhookHealthHtml(w, recent, new Date(), "health-h")}
${actions}
<h2 id="events-h">Events it receives</h2>
<p class="muted">The events this webhook is subscribed to, whether each fires on this server today, and its recent deliveries of each (of the last ${recent.length}).</p>
${eventsTable(w.events, recent, "events-h")}
<h2 id="deliveries-h">Deliveries</h2>
<p class="muted" role="status">${page.deliveries.length ? `${cursor ? "Older deliveries" : "The most recent"}, newest first, ${DELIVERIES_PAGE} a page.` : cursor ? "No older deliveries." : "No deliveries yet."} <a href="${cursor ? consoleUrl(`/webhooks/${w.id}`, { cursor }) : base}#deliveries-h">Refresh</a></p>
${rows ? `<div class="table-wrap"><table class="data stack" aria-labelledby="deliveries-h"><thead><tr><th>Event</th><th>State</th><th>Last response</th><th class="num">Attempts</th><th>Created</th><th>Action</th></tr></thead><tbody>${rows}</tbody></table></div>` : ""}
${pager}
<p><a href="${consoleUrl("/webhooks")}">Back to webhooks</a></p>`;
    return html(reply, consolePage({ title: w.displayName || "Webhook", session, active: "webhooks", flash: request.consoleFlash, body }));
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
