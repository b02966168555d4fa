/**
 * Webhooks (/console/webhooks): the views. The handlers are pages/webhooks.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { DeliveryState, WebhookStatus, type Delivery, type Webhook } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { consoleUrl, type Tone } from "../layout.js";
import { html, trusted, type Html } from "./html.js";
import { badge, field, time } from "./page-parts.js";
import { EVENT_INFO, eventsTable } from "./webhook-events.js";
import { webhookHealthHtml } from "./webhook-health.js";

/** Deliveries a page of the table shows. */
export const DELIVERIES_PAGE = 25;

/** What the create form holds (typed back after a refusal). */
export interface WebhookFormValues {
  url: string;
  displayName: string;
  events: string[];
}

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
const webhookBadge = (w: Webhook) => badge(WebhookStatus[w.status] ?? "UNKNOWN", STATUS_TONE[w.status] ?? "info");

function codeOf(d: Delivery): Html {
  const a = d.lastAttempt;
  if (!a) return html`<span class="muted">not tried yet</span>`;
  if (a.statusCode === 0) return html`${badge("no answer", "bad")} <span class="muted">${a.error}</span>`;
  return badge(String(a.statusCode), a.statusCode >= 200 && a.statusCode < 300 ? "ok" : "bad");
}

/** Retry for a failed delivery, resend for a delivered one; queued and held ones wait their turn. */
function redeliverButton(d: Delivery, base: string, csrf: Html): Html {
  if (d.state === DeliveryState.PENDING) return html`<span class="muted">queued</span>`;
  if (d.state === DeliveryState.HELD) return html`<span class="muted">held while disabled</span>`;
  const label = d.state === DeliveryState.FAILED ? "Retry" : "Resend";
  return html`<form method="post" action="${base}/deliveries/${d.id}/redeliver">${csrf}<button type="submit" class="secondary small" aria-label="${label} ${d.eventType} delivery ${d.id}">${label}</button></form>`;
}

function createForm(csrf: Html, values: WebhookFormValues): Html {
  const groups = EVENT_GROUPS.map((g, gi) => html`<fieldset class="field"><legend>${g.legend}</legend><div class="grid" style="grid-template-columns:repeat(auto-fit,minmax(min(100%,15rem),1fr));gap:.25rem 1rem">${g.events.map((e, i) => {
    // Nothing produces it yet: shown, not offered (the service would refuse it).
    const unavailable = EVENT_INFO[e]?.unavailable;
    const id = `ev-${gi}-${i}`;
    return html`<div class="check"><input type="checkbox" id="${id}" name="events" value="${e}"${values.events.includes(e) && !unavailable ? html` checked` : ""}${unavailable ? html` disabled aria-describedby="${id}-note"` : ""}><label for="${id}" style="font-weight:400"><code>${e}</code>${unavailable ? html` <span class="muted" id="${id}-note">(${unavailable})</span>` : ""}</label></div>`;
  })}</div></fieldset>`);
  return html`<form method="post" action="${consoleUrl("/webhooks")}" class="card">${csrf}
<div class="field"><label for="url">Endpoint URL</label><input id="url" name="url" type="url" required value="${values.url}" placeholder="https://example.com/hooks/mailroom" style="width:100%"></div>
<div class="field"><label for="displayName">Name (optional)</label><input id="displayName" name="displayName" value="${values.displayName}" style="width:100%"></div>
${groups}<div class="actions"><button type="submit">Add webhook</button></div></form>`;
}

/** The list of endpoints and, for those who may add one (`csrf` set), the create form. */
export function webhookListView(webhooks: Webhook[], csrf: string | undefined, values: WebhookFormValues): Html {
  const rows = webhooks.map((w) => html`<tr><td data-label="Endpoint"><a href="${consoleUrl(`/webhooks/${w.id}`)}">${w.displayName || w.url}</a>${w.displayName ? html`<br><span class="muted">${w.url}</span>` : ""}</td>
<td data-label="Events">${w.events.map((e, i) => html`${i ? ", " : ""}<code>${e}</code>`)}</td><td data-label="Status">${webhookBadge(w)}</td></tr>`);
  return html`<h1>Webhooks</h1>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Webhook endpoints</caption><thead><tr><th>Endpoint</th><th>Events</th><th>Status</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="muted">No webhooks yet.</p>`}
${csrf !== undefined ? html`<h2 id="add">Add a webhook</h2>${createForm(field(csrf), values)}` : ""}`;
}

export interface WebhookPageData {
  webhook: Webhook;
  /** The last deliveries (up to 200), for the health and per-event summaries. */
  recent: Delivery[];
  /** This page of the table, and the cursor of the next (older) one. */
  deliveries: Delivery[];
  nextCursor: string;
  /** The cursor this page was asked with ("" for the newest). */
  cursor: string;
  csrf: string;
  mayRedeliver: boolean;
  /** Test, disable/enable, delete and the signing secret. */
  manages: boolean;
  now: Date;
}

/** One webhook: details, health, actions, the events it receives and its deliveries. */
export function webhookPageView(p: WebhookPageData): Html {
  const w = p.webhook;
  const base = consoleUrl(`/webhooks/${w.id}`);
  const csrf = field(p.csrf);
  const rows = p.deliveries.map((d) => html`<tr data-delivery="${d.id}"><td data-label="Event"><code>${d.eventType}</code></td>
<td data-label="State">${badge(DeliveryState[d.state] ?? "UNKNOWN", STATE_TONE[d.state] ?? "info")}</td>
<td data-label="Response">${codeOf(d)}</td><td data-label="Attempts" class="num">${d.attempts}</td>
<td data-label="Created">${time(d.createdAt && timestampDate(d.createdAt))}</td>
<td data-label="Action">${p.mayRedeliver ? redeliverButton(d, base, csrf) : ""}</td></tr>`);
  const pager = p.nextCursor || p.cursor ? html`<nav class="actions" aria-label="Pages of deliveries">${p.cursor ? html`<a class="button secondary" href="${base}#deliveries-h">Newest deliveries</a>` : ""}${
    p.nextCursor ? html`<a class="button secondary" rel="next" href="${consoleUrl(`/webhooks/${w.id}`, { cursor: p.nextCursor })}#deliveries-h">Older deliveries</a>` : ""}</nav>` : "";
  const paused = w.status === WebhookStatus.PAUSED;
  const actions = p.manages ? html`<div class="actions">
<form method="post" action="${base}/test">${csrf}<button type="submit">Send test event</button></form>
${w.status === WebhookStatus.BANNED ? "" : html`<form method="post" action="${base}/status"${paused ? "" : html` data-confirm="Disable this webhook? Its deliveries are held until you enable it again."`}>${csrf}<input type="hidden" name="status" value="${paused ? "ACTIVE" : "PAUSED"}"><button type="submit" class="secondary">${paused ? "Enable" : "Disable"}</button></form>`}
<form method="post" action="${base}/delete" data-confirm="Delete this webhook?">${csrf}<button type="submit" class="danger">Delete</button></form></div>` : "";
  const state = p.deliveries.length ? `${p.cursor ? "Older deliveries" : "The most recent"}, newest first, ${DELIVERIES_PAGE} a page.` : p.cursor ? "No older deliveries." : "No deliveries yet.";
  return html`<h1>${w.displayName || "Webhook"} ${webhookBadge(w)}</h1>
<div class="card"><dl><dt class="muted">URL</dt><dd style="margin:0 0 .5rem"><code>${w.url}</code></dd>
${w.pausedReason ? html`<dt class="muted">Paused because</dt><dd style="margin:0 0 .5rem">${w.pausedReason}</dd>` : ""}
${p.manages ? html`<dt class="muted">Signing secret</dt><dd style="margin:0"><details><summary>Show</summary><code class="value">${w.token}</code></details>
<button type="button" class="copy secondary small" data-copy="${w.token}" hidden>Copy secret</button></dd>` : ""}</dl></div>
${trusted(webhookHealthHtml(w, p.recent, p.now, "health-h"))}
${actions}
<h2 id="events-h">Events it receives</h2>
<p class="muted">The events this webhook is subscribed to, whether each fires on this server today, and its recent deliveries of each (of the last ${p.recent.length}).</p>
${eventsTable(w.events, p.recent, "events-h")}
<h2 id="deliveries-h">Deliveries</h2>
<p class="muted" role="status">${state} <a href="${p.cursor ? consoleUrl(`/webhooks/${w.id}`, { cursor: p.cursor }) : base}#deliveries-h">Refresh</a></p>
${rows.length ? html`<div class="table-wrap"><table class="data stack" aria-labelledby="deliveries-h"><thead><tr><th>Event</th><th>State</th><th>Last response</th><th class="num">Attempts</th><th>Created</th><th>Action</th></tr></thead><tbody>${rows}</tbody></table></div>` : ""}
${pager}
<p><a href="${consoleUrl("/webhooks")}">Back to webhooks</a></p>`;
}
