/**
 * The contact page's Activity section: the views. ../contact-activity.ts reads the timeline.
 */
import type { ActivityItem } from "@mailroom/http/contact-activity.js";
import { consoleUrl, formatTime, statusBadge, type Tone } from "../layout.js";
import { html, trusted, type Html } from "./html.js";

const link = (path: string, text: string) => html`<a href="${consoleUrl(path)}">${text}</a>`;
const id = (v: string | undefined) => encodeURIComponent(v ?? "");
const badge = (text: string, tone: Tone) => trusted(statusBadge(text, tone));

/** What the message was: the transactional email, the broadcast, or its Message-ID. */
function messageOf(i: ActivityItem): Html {
  if (i.emailId) return html`${link(`/emails/${id(i.emailId)}`, i.subject ? `“${i.subject}”` : i.emailId)}${i.emailStatus ? html` ${badge(i.emailStatus, i.emailStatus === "FAILED" ? "bad" : "info")}` : ""}`;
  if (i.broadcastId) return html`broadcast ${link(`/broadcasts/${id(i.broadcastId)}`, i.broadcastId)}`;
  return i.messageId ? html`<code>${i.messageId}</code>` : html`an email`;
}

const TONE: Partial<Record<ActivityItem["type"], Tone>> = { email_bounced: "bad", suppressed: "bad", unsubscribed: "warn", contact_created: "ok", email_clicked: "ok" };

/** One timeline entry (every value escaped). */
export function activityText(i: ActivityItem): Html {
  switch (i.type) {
    case "email_sent": return html`<strong>Email sent</strong>: ${messageOf(i)}`;
    case "email_opened": return html`<strong>Opened</strong> ${messageOf(i)}`;
    case "email_clicked": return html`<strong>Clicked a link</strong> in ${messageOf(i)}`;
    case "email_bounced": return html`<strong>Bounced</strong>: ${messageOf(i)}`;
    case "event": return html`<strong>Event</strong> <code>${i.name ?? ""}</code>${i.properties ? html` <code>${JSON.stringify(i.properties)}</code>` : ""}`;
    case "automation_run": return html`<strong>Entered automation</strong> ${link(`/automations/${id(i.automationId)}`, i.automationId ?? "")} <span class="muted">(run ${i.runId ?? ""}, ${(i.runStatus ?? "").toLowerCase()})</span>`;
    case "webhook_delivery": return html`<strong>Webhook</strong> <code>${i.eventType ?? ""}</code> to ${link(`/webhooks/${id(i.webhookId)}`, i.webhookId ?? "")} ${badge(i.deliveryState ?? "", i.deliveryState === "FAILED" ? "bad" : i.deliveryState === "SUCCEEDED" ? "ok" : "info")} <span class="muted">${i.attempts ?? 0} attempt${i.attempts === 1 ? "" : "s"}</span>`;
    case "contact_created": return html`<strong>Contact created</strong> <span class="muted">(${i.source ?? "unknown source"})</span>`;
    case "unsubscribed": return html`<strong>Unsubscribed</strong>${i.reason ? html` <span class="muted">(${i.reason})</span>` : ""}`;
    case "suppressed": return html`<strong>Suppressed</strong>: ${(i.reason ?? "").replace(/_/g, " ")}`;
  }
}

const newest = (contactId: string) => `${consoleUrl(`/contacts/${contactId}`)}#act-tl-h`;

/** A page of the timeline with its paging (`cursor`: this page's; `next`: the older page's). */
export function activityView(opts: { contactId: string; items: ActivityItem[]; cursor: string; next?: string }): Html {
  const { contactId, cursor } = opts;
  if (!opts.items.length) return html`<p class="muted">${cursor ? "No older activity." : "No activity yet."}</p>`;
  const items = opts.items.map((i) => html`<li${TONE[i.type] ? html` class="${TONE[i.type]}"` : ""} data-type="${i.type}">${trusted(formatTime(new Date(i.occurredAt)))}<br>${activityText(i)}</li>`);
  const nav = [
    cursor ? html`<a href="${newest(contactId)}">Newest</a>` : undefined,
    opts.next ? html`<a href="${consoleUrl(`/contacts/${contactId}`, { activity: opts.next })}#act-tl-h" rel="next">Older activity</a>` : undefined,
  ].filter((x) => x !== undefined);
  return html`<ol class="timeline" aria-labelledby="act-tl-h">${items}</ol>${nav.length ? html`<p class="actions">${nav.map((n, i) => html`${i ? " · " : ""}${n}`)}</p>` : ""}`;
}

/** A cursor the timeline does not know (a stale or edited link). */
export const activityStaleView = (contactId: string): Html =>
  html`<p class="flash error" role="alert">This page of activity does not exist (the link is stale or was changed). <a href="${newest(contactId)}">Newest activity</a></p>`;

/** A unit could not answer. */
export const activityUnavailableView = (contactId: string, message: string): Html =>
  html`<p class="muted">The activity is not available right now: ${message}. <a href="${newest(contactId)}">Try again</a></p>`;
