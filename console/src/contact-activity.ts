/**
 * The contact page's Activity section: the contact's timeline (../contact-activity.ts merges it
 * from every unit), newest first, 25 a page, paged by `?activity=<cursor>` on the contact's page.
 */
import type { FastifyRequest } from "fastify";
import type { Contact } from "@mailroom/proto/directory/v1/directory_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { contactActivity, type ActivityItem } from "@mailroom/http/contact-activity.js";
import type { ConsoleDeps } from "./deps.js";
import { consoleUrl, escapeHtml, formatTime, statusBadge, type Tone } from "./layout.js";
import { sessionOf } from "./session.js";

export const ACTIVITY_PAGE = 25;

const link = (path: string, text: string) => `<a href="${escapeHtml(consoleUrl(path))}">${escapeHtml(text)}</a>`;
const id = (v: string | undefined) => encodeURIComponent(v ?? "");

/** What the message was: the transactional email, the broadcast, or its Message-ID. */
function messageOf(i: ActivityItem): string {
  if (i.emailId) return `${link(`/emails/${id(i.emailId)}`, i.subject ? `“${i.subject}”` : i.emailId)}${i.emailStatus ? ` ${statusBadge(i.emailStatus, i.emailStatus === "FAILED" ? "bad" : "info")}` : ""}`;
  if (i.broadcastId) return `broadcast ${link(`/broadcasts/${id(i.broadcastId)}`, i.broadcastId)}`;
  return i.messageId ? `<code>${escapeHtml(i.messageId)}</code>` : "an email";
}

const TONE: Partial<Record<ActivityItem["type"], Tone>> = { email_bounced: "bad", suppressed: "bad", unsubscribed: "warn", contact_created: "ok", email_clicked: "ok" };

/** One timeline entry as HTML (every value escaped). */
export function activityText(i: ActivityItem): string {
  switch (i.type) {
    case "email_sent": return `<strong>Email sent</strong>: ${messageOf(i)}`;
    case "email_opened": return `<strong>Opened</strong> ${messageOf(i)}`;
    case "email_clicked": return `<strong>Clicked a link</strong> in ${messageOf(i)}`;
    case "email_bounced": return `<strong>Bounced</strong>: ${messageOf(i)}`;
    case "event": return `<strong>Event</strong> <code>${escapeHtml(i.name ?? "")}</code>${i.properties ? ` <code>${escapeHtml(JSON.stringify(i.properties))}</code>` : ""}`;
    case "automation_run": return `<strong>Entered automation</strong> ${link(`/automations/${id(i.automationId)}`, i.automationId ?? "")} <span class="muted">(run ${escapeHtml(i.runId ?? "")}, ${escapeHtml((i.runStatus ?? "").toLowerCase())})</span>`;
    case "webhook_delivery": return `<strong>Webhook</strong> <code>${escapeHtml(i.eventType ?? "")}</code> to ${link(`/webhooks/${id(i.webhookId)}`, i.webhookId ?? "")} ${statusBadge(i.deliveryState ?? "", i.deliveryState === "FAILED" ? "bad" : i.deliveryState === "SUCCEEDED" ? "ok" : "info")} <span class="muted">${i.attempts ?? 0} attempt${i.attempts === 1 ? "" : "s"}</span>`;
    case "contact_created": return `<strong>Contact created</strong> <span class="muted">(${escapeHtml(i.source ?? "unknown source")})</span>`;
    case "unsubscribed": return `<strong>Unsubscribed</strong>${i.reason ? ` <span class="muted">(${escapeHtml(i.reason)})</span>` : ""}`;
    case "suppressed": return `<strong>Suppressed</strong>: ${escapeHtml((i.reason ?? "").replace(/_/g, " "))}`;
  }
}

/** The section's body: the timeline and its paging, or a message when a unit cannot answer. */
export async function contactActivitySection(deps: ConsoleDeps, request: FastifyRequest, contact: Contact, cursor: string): Promise<string> {
  const session = sessionOf(request);
  const first = consoleUrl(`/contacts/${contact.id}`) + "#act-tl-h";
  let page;
  try {
    page = await contactActivity(deps, session.workspaceId, contact, { limit: ACTIVITY_PAGE, cursor: cursor || undefined }, rpcOptions(request));
  } catch (err) {
    const e = bodyFromError(err);
    if (e.statusCode === 400) return `<p class="flash error" role="alert">This page of activity does not exist (the link is stale or was changed). <a href="${first}">Newest activity</a></p>`;
    request.log.warn({ err }, "contact activity not available");
    return `<p class="muted">The activity is not available right now: ${escapeHtml(e.message)}. <a href="${first}">Try again</a></p>`;
  }
  if (!page.items.length) return `<p class="muted">${cursor ? "No older activity." : "No activity yet."}</p>`;
  const items = page.items.map((i) => `<li${TONE[i.type] ? ` class="${TONE[i.type]}"` : ""} data-type="${i.type}">${formatTime(new Date(i.occurredAt))}<br>${activityText(i)}</li>`).join("");
  const nav = [
    cursor ? `<a href="${first}">Newest</a>` : "",
    page.cursor ? `<a href="${escapeHtml(consoleUrl(`/contacts/${contact.id}`, { activity: page.cursor }))}#act-tl-h" rel="next">Older activity</a>` : "",
  ].filter(Boolean).join(" · ");
  return `<ol class="timeline" aria-labelledby="act-tl-h">${items}</ol>${nav ? `<p class="actions">${nav}</p>` : ""}`;
}
