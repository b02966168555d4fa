/**
 * Emails: a searchable list (recipient, status, groupBy, creation date; EmailService.ListEmails)
 * and each email's page: status, timeline of what happened to it, its tags and attachments
 * (each downloadable), and its content rendered in a sandboxed frame (no scripts, no
 * same-origin access, no forms) plus the plain text.
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { EmailStatus, ListEmailsRequestSchema, type EmailRecord } from "@mailroom/proto/email/v1/email_pb.js";
import { CompiledMessageSchema, CompiledTemplateSchema, SegmentSchema, type CompiledMessage, type CompiledTemplate, type Segment } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { mergeMessage } from "@mailroom/content/merge.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";
import { EMAIL_ID } from "@mailroom/http/constants.js";
import { contentDisposition } from "@mailroom/http/received-content.js";
import type { ConsoleDeps } from "./deps.js";
import { CONSOLE_PREFIX, consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, type Tone } from "./layout.js";
import { sessionOf } from "./session.js";

const STATUSES: Array<{ key: string; label: string; value: EmailStatus; tone: Tone }> = [
  { key: "scheduled", label: "Scheduled", value: EmailStatus.SCHEDULED, tone: "info" },
  { key: "sent", label: "Sent", value: EmailStatus.SENT, tone: "info" },
  { key: "delivered", label: "Delivered", value: EmailStatus.DELIVERED, tone: "ok" },
  { key: "failed", label: "Failed", value: EmailStatus.FAILED, tone: "bad" },
  { key: "cancelled", label: "Cancelled", value: EmailStatus.CANCELLED, tone: "warn" },
];
const statusOf = (s: EmailStatus) => STATUSES.find((x) => x.value === s);
const badge = (e: EmailRecord) => {
  const s = statusOf(e.status);
  if (e.outcomes?.bouncedAt) return statusBadge(e.outcomes.bounceType === "soft" ? "Soft bounce" : "Bounced", "bad");
  return s ? statusBadge(s.label, s.tone) : statusBadge("Unknown", "warn");
};
const date = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);

/** A transparent 1×1 GIF in place of the open pixel. */
const BLANK_GIF = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

/**
 * The compiled email for looking at, not for sending: each tracked link is the address it
 * leads to (what the email's link redirects to), and the open pixel is a blank image. So
 * the view shows real links (never a placeholder host), and looking records no open or click.
 */
export function forViewing(compiled: CompiledMessage): CompiledMessage {
  const literal = (value: string): Segment => create(SegmentSchema, { part: { case: "literal", value } });
  const template = (t: CompiledTemplate | undefined, html: boolean) => create(CompiledTemplateSchema, {
    segments: (t?.segments ?? []).map((s) => {
      if (s.part.case === "link") {
        const url = compiled.links[s.part.value]?.url ?? "";
        return literal(html ? escapeHtml(url) : url);
      }
      return s.part.case === "openPixel" ? literal(BLANK_GIF) : s;
    }),
  });
  return create(CompiledMessageSchema, { ...compiled, html: template(compiled.html, true), text: template(compiled.text, false) });
}
const DAY = /^\d{4}-\d{2}-\d{2}$/;

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

const ATTACHMENT_INDEX = /^\d{1,4}$/;
const TAG = /^[A-Za-z0-9_-]{1,256}:[A-Za-z0-9_-]{1,256}$/;

function tagsHtml(e: EmailRecord): string {
  if (!e.tags.length) return "";
  return `<ul class="tags" id="tags" aria-label="Tags" style="list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.5rem">${e.tags.map((t) => `<li><code>${escapeHtml(t.name)}: ${escapeHtml(t.value)}</code></li>`).join("")}</ul>`;
}

function attachmentsHtml(e: EmailRecord): string {
  if (!e.attachments.length) return "";
  const rows = e.attachments.map((a, i) => `<tr><td data-label="File"><a href="${CONSOLE_PREFIX}/emails/${e.id}/attachments/${i}" download="${escapeHtml(a.filename)}">${escapeHtml(a.filename)}</a>${a.contentId ? ' <span class="muted">(inline)</span>' : ""}</td>
<td data-label="Type">${escapeHtml(a.contentType || "—")}</td><td data-label="Size" class="num">${formatBytes(Number(a.size))}</td></tr>`).join("");
  return `<h2>Attachments</h2><div class="table-wrap"><table class="data stack" id="attachments"><caption class="sr-only">Attachments of the email</caption>
<thead><tr><th scope="col">File</th><th scope="col">Type</th><th scope="col" class="num">Size</th></tr></thead><tbody>${rows}</tbody></table></div>
<p class="muted">Files can be downloaded while the email's content is kept.</p>`;
}

interface ListQuery {
  recipient: string;
  status: string;
  groupBy: string;
  tag: string;
  from: string;
  to: string;
  cursor: string;
}

/** The list's query string, read leniently: what cannot be a filter is a 400 page saying which. */
function readQuery(raw: Record<string, unknown>): ListQuery {
  const str = (k: string) => (typeof raw[k] === "string" ? (raw[k] as string).trim() : "");
  const q = { recipient: str("recipient"), status: str("status"), groupBy: str("groupBy"), tag: str("tag"), from: str("from"), to: str("to"), cursor: str("cursor") };
  if (q.tag && !TAG.test(q.tag)) throw refusal({ code: "invalid_request", message: "A tag is name:value, each letters, digits, “_” or “-” (e.g. category:invoice)." });
  if (q.recipient.length > 320) throw refusal({ code: "invalid_request", message: "The recipient search is at most 320 characters." });
  if (q.status && !STATUSES.some((s) => s.key === q.status)) throw refusal({ code: "invalid_request", message: "Pick a status from the list." });
  for (const k of ["from", "to"] as const) {
    if (q[k] && (!DAY.test(q[k]) || Number.isNaN(Date.parse(`${q[k]}T00:00:00Z`)))) throw refusal({ code: "invalid_request", message: `“${k === "from" ? "From" : "To"}” must be a date (YYYY-MM-DD).` });
  }
  if (q.groupBy.length > 200) throw refusal({ code: "invalid_request", message: "The group is at most 200 characters." });
  if (q.cursor.length > 200) throw refusal({ code: "invalid_request", message: "That page link is not valid." });
  return q;
}

function filterForm(q: ListQuery): string {
  const opt = (value: string, label: string) => `<option value="${value}"${q.status === value ? " selected" : ""}>${label}</option>`;
  return `<form method="get" action="${CONSOLE_PREFIX}/emails" class="card" role="search" aria-label="Search emails">
<div class="row">
<div class="field" style="flex:2 1 14rem"><label for="recipient">Recipient</label>
<input id="recipient" name="recipient" type="search" value="${escapeHtml(q.recipient)}" placeholder="ann@example.com or part of it" style="width:100%" autocomplete="off"></div>
<div class="field"><label for="status">Status</label><select id="status" name="status">${opt("", "Any")}${STATUSES.map((s) => opt(s.key, s.label)).join("")}</select></div>
<div class="field" style="flex:1 1 9rem"><label for="groupBy">Group (groupBy)</label><input id="groupBy" name="groupBy" value="${escapeHtml(q.groupBy)}" style="width:100%"></div>
<div class="field" style="flex:1 1 9rem"><label for="tag">Tag</label><input id="tag" name="tag" value="${escapeHtml(q.tag)}" placeholder="name:value" style="width:100%"></div>
<div class="field"><label for="from">From</label><input id="from" name="from" type="date" value="${escapeHtml(q.from)}"></div>
<div class="field"><label for="to">To</label><input id="to" name="to" type="date" value="${escapeHtml(q.to)}"></div>
<div class="field"><button type="submit">Search</button></div>
</div></form>`;
}

function emailRow(e: EmailRecord): string {
  const what = e.subject || (e.template ? `Template: ${e.template}` : "(no subject)");
  return `<tr><td data-label="Recipient"><a href="${CONSOLE_PREFIX}/emails/${e.id}">${escapeHtml(e.to)}</a></td>
<td data-label="Subject">${escapeHtml(what)}${e.tags.length ? `<br><span class="muted">${e.tags.map((t) => escapeHtml(`${t.name}: ${t.value}`)).join(", ")}</span>` : ""}${e.attachments.length ? `<br><span class="muted">${e.attachments.length} attachment${e.attachments.length === 1 ? "" : "s"}</span>` : ""}</td><td data-label="Status">${badge(e)}</td>
<td data-label="Group">${e.groupBy ? escapeHtml(e.groupBy) : '<span class="muted">—</span>'}</td>
<td data-label="Opens" class="num">${e.outcomes?.opens ?? 0}</td><td data-label="Clicks" class="num">${e.outcomes?.clicks ?? 0}</td>
<td data-label="Created">${formatTime(date(e.createdAt))}</td></tr>`;
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

export function registerEmailPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/emails", async (request, reply) => {
    const session = sessionOf(request);
    const q = readQuery(request.query as Record<string, unknown>);
    const status = STATUSES.find((s) => s.key === q.status);
    const toDay = q.to ? new Date(Date.parse(`${q.to}T00:00:00Z`) + 86_400_000) : undefined;
    const res = await deps.clients.email.listEmails(create(ListEmailsRequestSchema, {
      workspaceId: session.workspaceId,
      recipient: q.recipient,
      statuses: status ? [status.value] : [],
      groupBy: q.groupBy || undefined,
      tags: q.tag ? [q.tag] : [],
      createdFrom: q.from ? timestampFromDate(new Date(`${q.from}T00:00:00Z`)) : undefined,
      createdTo: toDay ? timestampFromDate(toDay) : undefined,
      limit: 25,
      cursor: q.cursor,
    }), rpcOptions(request));
    const filtered = q.recipient || q.status || q.groupBy || q.tag || q.from || q.to;
    const table = res.emails.length
      ? `<div class="table-wrap"><table class="data stack" id="emails"><caption class="sr-only">Emails, newest first</caption>
<thead><tr><th scope="col">Recipient</th><th scope="col">Subject</th><th scope="col">Status</th><th scope="col">Group</th><th scope="col" class="num">Opens</th><th scope="col" class="num">Clicks</th><th scope="col">Created</th></tr></thead>
<tbody>${res.emails.map(emailRow).join("")}</tbody></table></div>`
      : `<p class="card">${filtered ? "No email matches these filters." : "No emails yet. Send one with <code>POST /v1/emails</code>."}</p>`;
    const pager = [
      q.cursor ? `<a class="button secondary" href="${consoleUrl("/emails", { ...q, cursor: undefined })}">Newest</a>` : "",
      res.nextCursor ? `<a class="button secondary" rel="next" href="${consoleUrl("/emails", { ...q, cursor: res.nextCursor })}">Older emails</a>` : "",
    ].join("");
    return reply.type("text/html; charset=utf-8").send(consolePage({
      title: "Emails", session, active: "emails", flash: request.consoleFlash,
      body: `<h1>Emails</h1>${filterForm(q)}<p class="muted" role="status">${res.emails.length} email${res.emails.length === 1 ? "" : "s"} shown${filtered ? " (filtered)" : ""}.</p>${table}${pager ? `<nav class="actions" aria-label="Pages">${pager}</nav>` : ""}`,
    }));
  });

  scope.get("/emails/:id", async (request, reply) => {
    const session = sessionOf(request);
    const id = (request.params as { id: string }).id;
    // Ids that cannot exist, and other workspaces' ids, are the same 404.
    if (!EMAIL_ID.test(id)) throw refusal({ code: "email_not_found", message: "There is no such email in this workspace." });
    const { email: e } = await deps.clients.email.getEmail({ workspaceId: session.workspaceId, id }, rpcOptions(request));
    if (!e) throw refusal({ code: "email_not_found", message: "There is no such email in this workspace." });

    let content: string;
    try {
      const { compiled } = await deps.clients.email.getEmailContent({ workspaceId: session.workspaceId, id }, rpcOptions(request));
      if (!compiled) throw new ConnectError("no content", Code.NotFound);
      // Merged for display only: tracked links show where they lead and the open pixel is
      // blank, so looking at an email records no open or click; the unsubscribe and manage
      // links are the recipient's own, as sent (their pages ask before they change anything).
      const merged = mergeMessage(forViewing(compiled), { email: e.to, messageId: e.messageId }, { secret: deps.config.secret, publicUrl: deps.config.publicUrl });
      content = `<h2>Content</h2>
<p class="muted">Personalised values of templates may be blank here; links are disabled in this preview. Tracked links show the address they lead to.</p>
<iframe class="mail" title="Rendered content of the email" sandbox="" referrerpolicy="no-referrer" srcdoc="${escapeHtml(merged.html)}"></iframe>
<h2>Plain text</h2><pre>${escapeHtml(merged.text)}</pre>`;
    } catch (err) {
      const gone = (err instanceof ConnectError && err.code === Code.NotFound) || errorInfoOf(err)?.code === "email_not_found";
      if (!gone) throw err;
      content = `<h2>Content</h2><p class="muted">The content is kept only until the email is delivered, failed or cancelled; it is no longer stored.</p>`;
    }

    const o = e.outcomes;
    const details = [
      ["From", e.from || "—"], ["To", e.to],
      ...(e.cc.length ? [["Cc", e.cc.join(", ")]] : []), ...(e.bcc.length ? [["Bcc", e.bcc.join(", ")]] : []),
      ...(e.suppressed.length ? [["Not sent to (suppressed)", e.suppressed.map((x) => `${x.email} (${x.reason})`).join(", ")]] : []),
      ["Subject", e.subject || (e.template ? `Template ${e.template}` : "—")],
      ["Group (groupBy)", e.groupBy || "—"], ["Message-ID", e.messageId], ["Email id", e.id],
      ["Delivery route", routeOf(e) || "—"],
      ...e.headers.map((h) => [`Header ${h.name}`, h.value]),
    ].map(([k, v]) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join("");
    const tags = e.tags.length ? `<h2>Tags</h2>${tagsHtml(e)}` : "";
    const links = o?.links.length
      ? `<h2>Clicked links</h2><div class="table-wrap"><table class="data"><thead><tr><th scope="col">Link</th><th scope="col" class="num">Clicks</th><th scope="col">Last click</th></tr></thead><tbody>${
        o.links.map((l) => `<tr><td>${escapeHtml(l.url)}</td><td class="num">${l.clicks}</td><td>${formatTime(date(l.lastClickedAt))}</td></tr>`).join("")}</tbody></table></div>`
      : "";
    const body = `<p><a href="${CONSOLE_PREFIX}/emails">← All emails</a></p>
<h1>${escapeHtml(e.subject || e.to)}</h1>
<p>Status: ${badge(e)}${e.statusReason ? ` <span class="muted">${escapeHtml(e.statusReason)}</span>` : ""}</p>
<div class="grid"><div class="card"><h2 style="margin-top:0">Details</h2><table class="data"><tbody>${details}</tbody></table></div>
<div class="card"><h2 style="margin-top:0">Timeline</h2><ol class="timeline" id="timeline">${timeline(e).map((t) =>
      `<li${t.tone ? ` class="${t.tone}"` : ""}><strong>${escapeHtml(t.label)}</strong><br>${formatTime(t.at)}${t.detail ? `<br><span class="muted">${escapeHtml(t.detail)}</span>` : ""}</li>`).join("")}</ol></div></div>
${tags}${attachmentsHtml(e)}${links}${content}`;
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: e.subject || "Email", session, active: "emails", flash: request.consoleFlash, body }));
  });

  // One attachment's bytes, of the signed-in workspace's own email only (the workspace comes
  // from the session). Always a download as opaque bytes: a file the sender chose (HTML, SVG)
  // never renders on the console's origin.
  scope.get("/emails/:id/attachments/:index", async (request, reply) => {
    const session = sessionOf(request);
    const { id, index } = request.params as { id: string; index: string };
    const missing = () => refusal({ code: "not_found", message: "There is no such attachment in this workspace." });
    if (!EMAIL_ID.test(id) || !ATTACHMENT_INDEX.test(index)) throw missing();
    let res;
    try {
      res = await deps.clients.email.getEmailAttachment({ workspaceId: session.workspaceId, id, index: Number(index) }, rpcOptions(request));
    } catch (err) {
      const gone = (err instanceof ConnectError && err.code === Code.NotFound) || ["email_not_found", "not_found", "attachment_not_found"].includes(errorInfoOf(err)?.code ?? "");
      if (gone) throw missing();
      throw err;
    }
    const name = res.attachment?.filename || `attachment-${index}`;
    return reply
      .type("application/octet-stream")
      .header("content-disposition", contentDisposition(name))
      .header("content-length", res.content.byteLength)
      .send(Buffer.from(res.content.buffer, res.content.byteOffset, res.content.byteLength));
  });
}
