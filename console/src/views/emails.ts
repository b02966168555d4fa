/**
 * Emails (/console/emails), the views: the searchable list and one email's page (status,
 * timeline, details, tags, attachments, clicked links, its content in a sandboxed frame).
 * The handlers are pages/emails.ts.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { EmailStatus, type EmailRecord } from "@mailroom/proto/email/v1/email_pb.js";
import { CONSOLE_PREFIX, consoleUrl, formatTime, statusBadge, type Tone } from "../layout.js";
import { html, trusted, type Html } from "./html.js";

export const STATUSES: Array<{ key: string; label: string; value: EmailStatus; tone: Tone }> = [
  { key: "scheduled", label: "Scheduled", value: EmailStatus.SCHEDULED, tone: "info" },
  { key: "sent", label: "Sent", value: EmailStatus.SENT, tone: "info" },
  { key: "delivered", label: "Delivered", value: EmailStatus.DELIVERED, tone: "ok" },
  { key: "failed", label: "Failed", value: EmailStatus.FAILED, tone: "bad" },
  { key: "cancelled", label: "Cancelled", value: EmailStatus.CANCELLED, tone: "warn" },
];
const statusOf = (s: EmailStatus) => STATUSES.find((x) => x.value === s);
const badge = (e: EmailRecord) => {
  const s = statusOf(e.status);
  if (e.outcomes?.bouncedAt) return trusted(statusBadge(e.outcomes.bounceType === "soft" ? "Soft bounce" : "Bounced", "bad"));
  return trusted(s ? statusBadge(s.label, s.tone) : statusBadge("Unknown", "warn"));
};
const date = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);
const time = (d: Date | undefined) => trusted(formatTime(d));

/** 1536 -> "1.5 KB": sizes as people read them (binary units, as file managers show). */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KB", "MB", "GB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 10 ? Math.round(v) : Math.round(v * 10) / 10} ${units[u]}`;
}

function tagsView(e: EmailRecord): Html {
  return html`<ul class="tags" id="tags" aria-label="Tags" style="list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.5rem">${e.tags.map((t) => html`<li><code>${t.name}: ${t.value}</code></li>`)}</ul>`;
}

function attachmentsView(e: EmailRecord): Html | "" {
  if (!e.attachments.length) return "";
  const rows = e.attachments.map((a, i) => html`<tr><td data-label="File"><a href="${CONSOLE_PREFIX}/emails/${e.id}/attachments/${i}" download="${a.filename}">${a.filename}</a>${a.contentId ? html` <span class="muted">(inline)</span>` : ""}</td>
<td data-label="Type">${a.contentType || "—"}</td><td data-label="Size" class="num">${formatBytes(Number(a.size))}</td></tr>`);
  return html`<h2>Attachments</h2><div class="table-wrap"><table class="data stack" id="attachments"><caption class="sr-only">Attachments of the email</caption>
<thead><tr><th scope="col">File</th><th scope="col">Type</th><th scope="col" class="num">Size</th></tr></thead><tbody>${rows}</tbody></table></div>
<p class="muted">Files can be downloaded while the email's content is kept.</p>`;
}

export interface ListQuery {
  recipient: string;
  status: string;
  groupBy: string;
  tag: string;
  from: string;
  to: string;
  cursor: string;
}

function filterForm(q: ListQuery): Html {
  const opt = (value: string, label: string) => html`<option value="${value}"${q.status === value ? html` selected` : ""}>${label}</option>`;
  return html`<form method="get" action="${CONSOLE_PREFIX}/emails" class="card" role="search" aria-label="Search emails">
<div class="row">
<div class="field" style="flex:2 1 14rem"><label for="recipient">Recipient</label>
<input id="recipient" name="recipient" type="search" value="${q.recipient}" placeholder="ann@example.com or part of it" style="width:100%" autocomplete="off"></div>
<div class="field"><label for="status">Status</label><select id="status" name="status">${opt("", "Any")}${STATUSES.map((s) => opt(s.key, s.label))}</select></div>
<div class="field" style="flex:1 1 9rem"><label for="groupBy">Group (groupBy)</label><input id="groupBy" name="groupBy" value="${q.groupBy}" style="width:100%"></div>
<div class="field" style="flex:1 1 9rem"><label for="tag">Tag</label><input id="tag" name="tag" value="${q.tag}" placeholder="name:value" style="width:100%"></div>
<div class="field"><label for="from">From</label><input id="from" name="from" type="date" value="${q.from}"></div>
<div class="field"><label for="to">To</label><input id="to" name="to" type="date" value="${q.to}"></div>
<div class="field"><button type="submit">Search</button></div>
</div></form>`;
}

function emailRow(e: EmailRecord): Html {
  const what = e.subject || (e.template ? `Template: ${e.template}` : "(no subject)");
  return html`<tr><td data-label="Recipient"><a href="${CONSOLE_PREFIX}/emails/${e.id}">${e.to}</a></td>
<td data-label="Subject">${what}${e.tags.length ? html`<br><span class="muted">${e.tags.map((t) => `${t.name}: ${t.value}`).join(", ")}</span>` : ""}${e.attachments.length ? html`<br><span class="muted">${e.attachments.length} attachment${e.attachments.length === 1 ? "" : "s"}</span>` : ""}</td><td data-label="Status">${badge(e)}</td>
<td data-label="Group">${e.groupBy ? e.groupBy : html`<span class="muted">—</span>`}</td>
<td data-label="Opens" class="num">${e.outcomes?.opens ?? 0}</td><td data-label="Clicks" class="num">${e.outcomes?.clicks ?? 0}</td>
<td data-label="Created">${time(date(e.createdAt))}</td></tr>`;
}

/** The list: the search form, the emails found and the pages (`nextCursor`: older ones). */
export function emailListView(q: ListQuery, emails: EmailRecord[], nextCursor: string): Html {
  const filtered = q.recipient || q.status || q.groupBy || q.tag || q.from || q.to;
  const table = emails.length
    ? html`<div class="table-wrap"><table class="data stack" id="emails"><caption class="sr-only">Emails, newest first</caption>
<thead><tr><th scope="col">Recipient</th><th scope="col">Subject</th><th scope="col">Status</th><th scope="col">Group</th><th scope="col" class="num">Opens</th><th scope="col" class="num">Clicks</th><th scope="col">Created</th></tr></thead>
<tbody>${emails.map(emailRow)}</tbody></table></div>`
    : html`<p class="card">${filtered ? "No email matches these filters." : html`No emails yet. Send one with <code>POST /v1/emails</code>.`}</p>`;
  const pager = [
    q.cursor ? html`<a class="button secondary" href="${consoleUrl("/emails", { ...q, cursor: undefined })}">Newest</a>` : "",
    nextCursor ? html`<a class="button secondary" rel="next" href="${consoleUrl("/emails", { ...q, cursor: nextCursor })}">Older emails</a>` : "",
  ].filter((link) => link !== "");
  return html`<h1>Emails</h1>${filterForm(q)}<p class="muted" role="status">${emails.length} email${emails.length === 1 ? "" : "s"} shown${filtered ? " (filtered)" : ""}.</p>${table}${pager.length ? html`<nav class="actions" aria-label="Pages">${pager}</nav>` : ""}`;
}

interface TimelineEntry { at?: Date; label: string; tone?: "ok" | "bad"; detail?: string }

/** " via route <name>" when the event named the delivery route (DESIGN §9.7). */
const via = (route: string | undefined) => (route ? ` via route ${route}` : "");

/** The route the console shows for an email: the one that delivered it, else the last one that tried. */
export function routeOf(e: EmailRecord): string {
  const o = e.outcomes;
  return o?.deliveredRoute || o?.bouncedRoute || o?.failedRoute || o?.route || "";
}

export function timeline(e: EmailRecord): TimelineEntry[] {
  const o = e.outcomes;
  const entries: TimelineEntry[] = [{ at: date(e.createdAt), label: "Accepted by the API" }];
  if (e.sendAt) entries.push({ at: date(e.sendAt), label: e.status === EmailStatus.SCHEDULED ? "Scheduled to send" : "Scheduled send time" });
  if (e.sentAt) entries.push({ at: date(e.sentAt), label: "Sent (handed to delivery)" });
  if (o?.deferrals && o.lastDeferredAt) {
    entries.push({
      at: date(o.lastDeferredAt),
      label: `Deferred${o.deferrals > 1 ? ` (${o.deferrals} times, the latest shown)` : ""}${via(o.lastDeferredRoute)}, retried later`,
      detail: o.lastDeferredDetail || undefined,
    });
  }
  if (o?.deliveredAt) entries.push({ at: date(o.deliveredAt), label: `Delivered (accepted by the receiving server)${via(o.deliveredRoute)}`, tone: "ok" });
  if (o?.confirmedAt) entries.push({ at: date(o.confirmedAt), label: `Delivery confirmed by the relay provider${via(o.confirmedRoute)}: the recipient's server accepted it`, tone: "ok" });
  if (o?.bouncedAt) entries.push({ at: date(o.bouncedAt), label: `Bounced${o.bounceType ? ` (${o.bounceType})` : ""}${via(o.bouncedRoute)}`, tone: "bad", detail: e.statusReason });
  if (o?.failedAt) entries.push({ at: date(o.failedAt), label: `Failed${via(o.failedRoute)}`, tone: "bad", detail: e.statusReason });
  if (e.status === EmailStatus.FAILED && !o?.failedAt && !o?.bouncedAt) entries.push({ at: date(e.updatedAt), label: "Failed", tone: "bad", detail: e.statusReason });
  if (e.status === EmailStatus.CANCELLED) entries.push({ at: date(e.updatedAt), label: "Cancelled" });
  if (o?.firstOpenedAt) entries.push({ at: date(o.firstOpenedAt), label: `Opened${o.opens > 1 ? ` (${o.opens} times, last ${date(o.lastOpenedAt)?.toISOString().slice(0, 16).replace("T", " ") ?? ""} UTC)` : ""}` });
  if (o?.firstClickedAt) entries.push({ at: date(o.firstClickedAt), label: `Clicked${o.clicks > 1 ? ` (${o.clicks} clicks)` : ""}` });
  if (o?.complainedAt) entries.push({ at: date(o.complainedAt), label: "Marked as spam", tone: "bad" });
  if (o?.unsubscribedAt) entries.push({ at: date(o.unsubscribedAt), label: "Unsubscribed", tone: "bad" });
  // DESIGN §10.4: replies the inbound unit matched to this email (the status stays as it was).
  if (o?.replies && o.lastRepliedAt) {
    entries.push({ at: date(o.lastRepliedAt), label: `Replied${o.replies > 1 ? ` (${o.replies} replies, the latest shown)` : ""}`, tone: "ok", detail: o.lastReplyId ? `received email ${o.lastReplyId}` : undefined });
  }
  return entries.sort((a, b) => (a.at?.getTime() ?? 0) - (b.at?.getTime() ?? 0));
}

/** The content as merged for viewing, or undefined when it is no longer stored. */
export type ViewedContent = { html: string; text: string } | undefined;

/** One email: status, details, timeline, tags, attachments, clicked links and its content. */
export function emailPageView(e: EmailRecord, content: ViewedContent): Html {
  const o = e.outcomes;
  const details = [
    ["From", e.from || "—"], ["To", e.to],
    ...(e.cc.length ? [["Cc", e.cc.join(", ")]] : []), ...(e.bcc.length ? [["Bcc", e.bcc.join(", ")]] : []),
    ...(e.suppressed.length ? [["Not sent to (suppressed)", e.suppressed.map((x) => `${x.email} (${x.reason})`).join(", ")]] : []),
    ["Subject", e.subject || (e.template ? `Template ${e.template}` : "—")],
    ["Group (groupBy)", e.groupBy || "—"], ["Message-ID", e.messageId], ["Email id", e.id],
    ["Delivery route", routeOf(e) || "—"],
    ...e.headers.map((h) => [`Header ${h.name}`, h.value]),
  ].map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${v}</td></tr>`);
  const tags = e.tags.length ? html`<h2>Tags</h2>${tagsView(e)}` : "";
  const links = o?.links.length
    ? html`<h2>Clicked links</h2><div class="table-wrap"><table class="data"><thead><tr><th scope="col">Link</th><th scope="col" class="num">Clicks</th><th scope="col">Last click</th></tr></thead><tbody>${
      o.links.map((l) => html`<tr><td>${l.url}</td><td class="num">${l.clicks}</td><td>${time(date(l.lastClickedAt))}</td></tr>`)}</tbody></table></div>`
    : "";
  const shown = content
    ? html`<h2>Content</h2>
<p class="muted">Personalised values of templates may be blank here; links are disabled in this preview. Tracked links show the address they lead to.</p>
<iframe class="mail" title="Rendered content of the email" sandbox="" referrerpolicy="no-referrer" srcdoc="${content.html}"></iframe>
<h2>Plain text</h2><pre>${content.text}</pre>`
    : html`<h2>Content</h2><p class="muted">The content is kept only until the email is delivered, failed or cancelled; it is no longer stored.</p>`;
  return html`<p><a href="${CONSOLE_PREFIX}/emails">← All emails</a></p>
<h1>${e.subject || e.to}</h1>
<p>Status: ${badge(e)}${e.statusReason ? html` <span class="muted">${e.statusReason}</span>` : ""}</p>
<div class="grid"><div class="card"><h2 style="margin-top:0">Details</h2><table class="data"><tbody>${details}</tbody></table></div>
<div class="card"><h2 style="margin-top:0">Timeline</h2><ol class="timeline" id="timeline">${timeline(e).map((t) =>
    html`<li${t.tone ? html` class="${t.tone}"` : ""}><strong>${t.label}</strong><br>${time(t.at)}${t.detail ? html`<br><span class="muted">${t.detail}</span>` : ""}</li>`)}</ol></div></div>
${tags}${attachmentsView(e)}${links}${shown}`;
}
