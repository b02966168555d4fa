/**
 * Received: the emails the workspace received (DESIGN §10.4), newest first and filtered, each
 * with a badge linking the email or broadcast it answers; and each email's page: its headers,
 * the stripped reply, the text, its attachments (downloads) and the HTML.
 *
 * A received message is a stranger's content: every value is escaped, and the HTML is shown
 * in a frame that can do nothing — `sandbox` without allow-scripts or allow-same-origin (no
 * script runs, the frame is a unique origin, no form, popup or top navigation), its document
 * from `srcdoc` (never served from our origin), and a Content-Security-Policy at its top that
 * fetches nothing (no remote image, font or stylesheet: no tracking pixel fires). The
 * console's own CSP (frame-src 'none') also stops a clicked link from loading in the frame.
 */
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import type { ReceivedAddress, ReceivedEmail } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";
import { RECEIVED_ATTACHMENT_ID, RECEIVED_EMAIL_ID } from "@mailroom/http/received-emails-schema.js";
import { sendReceivedContent } from "@mailroom/http/received-content.js";
import type { ConsoleDeps } from "./deps.js";
import { formatBytes } from "./views/emails.js";
import { CONSOLE_PREFIX, consolePage, consoleUrl, escapeHtml, formatTime, statusBadge } from "./layout.js";
import { sessionOf } from "./session.js";

const date = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const PAGE_SIZE = 25;

/** The policy at the top of the frame's document: inline styles and embedded images only. */
export const FRAME_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data: cid:";

/** The frame's whole document: the policy first, so it holds before any of the message is parsed. */
export function frameDocument(html: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${FRAME_CSP}"><meta name="referrer" content="no-referrer"></head><body>${html}</body></html>`;
}

/** The received HTML in a frame that runs and fetches nothing (see the file's comment). */
export function sandboxedFrame(html: string): string {
  return `<iframe class="mail" id="received-html" title="The email's HTML (scripts and remote content blocked)" sandbox="" referrerpolicy="no-referrer" srcdoc="${escapeHtml(frameDocument(html))}"></iframe>`;
}

const addressText = (a: ReceivedAddress | undefined) => (a ? (a.name ? `${a.name} <${a.address}>` : a.address) : "");
const addressesText = (list: ReceivedAddress[]) => list.map(addressText).join(", ");

/** The badge of a reply: what it answers, linked to its page. */
export function replyBadge(e: ReceivedEmail): string {
  const r = e.inReplyTo;
  if (r?.emailId) return `<a href="${CONSOLE_PREFIX}/emails/${encodeURIComponent(r.emailId)}" class="reply-to">${statusBadge("Reply to an email", "info")}</a>`;
  if (r?.broadcastId) return `<a href="${CONSOLE_PREFIX}/broadcasts/${encodeURIComponent(r.broadcastId)}" class="reply-to">${statusBadge("Reply to a broadcast", "info")}</a>`;
  return "";
}

interface ListQuery {
  to: string;
  from: string;
  since: string;
  cursor: string;
}

function readQuery(raw: Record<string, unknown>): ListQuery {
  const str = (k: string) => (typeof raw[k] === "string" ? (raw[k] as string).trim() : "");
  const q = { to: str("to"), from: str("from"), since: str("since"), cursor: str("cursor") };
  for (const k of ["to", "from"] as const) {
    if (q[k] && (q[k].length > 320 || !/^[^\s@]+@[^\s@]+$/.test(q[k]))) throw refusal({ code: "invalid_request", message: `“${k === "to" ? "To" : "From"}” must be a whole email address.` });
  }
  if (q.since && (!DAY.test(q.since) || Number.isNaN(Date.parse(`${q.since}T00:00:00Z`)))) throw refusal({ code: "invalid_request", message: "“Since” must be a date (YYYY-MM-DD)." });
  if (q.cursor.length > 200) throw refusal({ code: "invalid_request", message: "That page link is not valid." });
  return q;
}

function filterForm(q: ListQuery): string {
  return `<form method="get" action="${CONSOLE_PREFIX}/received" class="card" role="search" aria-label="Search received emails">
<div class="row">
<div class="field" style="flex:1 1 12rem"><label for="to">To</label><input id="to" name="to" type="search" value="${escapeHtml(q.to)}" placeholder="support@in.example.com" style="width:100%" autocomplete="off"></div>
<div class="field" style="flex:1 1 12rem"><label for="from">From</label><input id="from" name="from" type="search" value="${escapeHtml(q.from)}" placeholder="ann@example.com" style="width:100%" autocomplete="off"></div>
<div class="field"><label for="since">Since</label><input id="since" name="since" type="date" value="${escapeHtml(q.since)}"></div>
<div class="field"><button type="submit">Search</button></div>
</div></form>`;
}

function row(e: ReceivedEmail): string {
  const files = e.attachments.length;
  return `<tr><td data-label="From">${escapeHtml(addressText(e.from))}</td>
<td data-label="To">${escapeHtml(e.envelopeTo.join(", ") || addressesText(e.to))}</td>
<td data-label="Subject"><a href="${CONSOLE_PREFIX}/received/${encodeURIComponent(e.id)}">${escapeHtml(e.subject || "(no subject)")}</a> ${replyBadge(e)}</td>
<td data-label="Received">${formatTime(date(e.receivedAt))}</td>
<td data-label="Attachments" class="num">${files}</td></tr>`;
}

export function registerReceivedPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/received", async (request, reply) => {
    const session = sessionOf(request);
    const q = readQuery(request.query as Record<string, unknown>);
    const res = await deps.clients.receiving.listReceivedEmails({
      workspaceId: session.workspaceId,
      to: q.to.toLowerCase(),
      from: q.from.toLowerCase(),
      ...(q.since ? { since: timestampFromDate(new Date(`${q.since}T00:00:00Z`)) } : {}),
      limit: PAGE_SIZE,
      cursor: q.cursor,
    }, rpcOptions(request));
    const filtered = q.to || q.from || q.since;
    const table = res.emails.length
      ? `<div class="table-wrap"><table class="data stack" id="received"><caption class="sr-only">Received emails, newest first</caption>
<thead><tr><th scope="col">From</th><th scope="col">To</th><th scope="col">Subject</th><th scope="col">Received</th><th scope="col" class="num">Attachments</th></tr></thead>
<tbody>${res.emails.map(row).join("")}</tbody></table></div>`
      : `<p class="card">${filtered ? "No received email matches these filters." : `Nothing received yet. Add an <a href="${CONSOLE_PREFIX}/inbound">inbound domain</a> and a rule to receive mail.`}</p>`;
    const pager = [
      q.cursor ? `<a class="button secondary" href="${consoleUrl("/received", { ...q, cursor: undefined })}">Newest</a>` : "",
      res.nextCursor ? `<a class="button secondary" rel="next" href="${consoleUrl("/received", { ...q, cursor: res.nextCursor })}">Older emails</a>` : "",
    ].join("");
    return reply.type("text/html; charset=utf-8").send(consolePage({
      title: "Received", session, active: "received", flash: request.consoleFlash,
      body: `<h1>Received emails</h1>${filterForm(q)}<p class="muted" role="status">${res.emails.length} email${res.emails.length === 1 ? "" : "s"} shown${filtered ? " (filtered)" : ""}.</p>${table}${pager ? `<nav class="actions" aria-label="Pages">${pager}</nav>` : ""}`,
    }));
  });

  scope.get("/received/:id", async (request, reply) => {
    const session = sessionOf(request);
    const id = (request.params as { id: string }).id;
    // Ids that cannot exist, and other workspaces' ids, are the same 404.
    if (!RECEIVED_EMAIL_ID.test(id)) throw refusal({ code: "received_email_not_found", message: "There is no such received email in this workspace." });
    const { email: e } = await deps.clients.receiving.getReceivedEmail({ workspaceId: session.workspaceId, id }, rpcOptions(request));
    if (!e) throw refusal({ code: "received_email_not_found", message: "There is no such received email in this workspace." });
    const base = `${CONSOLE_PREFIX}/received/${encodeURIComponent(e.id)}`;
    const details = [
      ["From", addressText(e.from)],
      ["To", addressesText(e.to)],
      ...(e.cc.length ? [["Cc", addressesText(e.cc)]] : []),
      ["Envelope recipients", e.envelopeTo.join(", ")],
      ["Envelope sender", e.mailFrom || "(none: a bounce)"],
      ["Subject", e.subject],
      ["Message-ID", e.messageId],
      ...(e.mailboxHash ? [["Plus-address tag (mailboxHash)", e.mailboxHash]] : []),
      ...(e.spamScore !== undefined ? [["Spam score", String(e.spamScore)]] : []),
      ["Size", formatBytes(Number(e.size))],
      ["Rule", e.action ? `${e.action}${e.ruleId ? ` (${e.ruleId})` : ""}` : "—"],
      ["Received email id", e.id],
    ].map(([k, v]) => `<tr><th scope="row">${escapeHtml(k!)}</th><td>${escapeHtml(v || "—")}</td></tr>`).join("");
    const forwarded = e.forwardedEmailId
      ? `<p>Forwarded as <a href="${CONSOLE_PREFIX}/emails/${encodeURIComponent(e.forwardedEmailId)}">${escapeHtml(e.forwardedEmailId)}</a> (its delivery shows there).</p>`
      : "";
    const reply_ = replyBadge(e) ? `<p>${replyBadge(e)}${e.inReplyTo?.contactId ? ` <a href="${CONSOLE_PREFIX}/contacts/${encodeURIComponent(e.inReplyTo.contactId)}">the contact</a>` : ""}</p>` : "";
    const attachments = e.attachments.length
      ? `<h2>Attachments</h2><div class="table-wrap"><table class="data stack" id="attachments"><caption class="sr-only">Attachments of the email</caption>
<thead><tr><th scope="col">File</th><th scope="col">Type</th><th scope="col" class="num">Size</th></tr></thead><tbody>${e.attachments.map((a) =>
        `<tr><td data-label="File"><a href="${base}/attachments/${encodeURIComponent(a.id)}" download="${escapeHtml(a.filename)}">${escapeHtml(a.filename || a.id)}</a>${a.disposition === "inline" ? ' <span class="muted">(inline)</span>' : ""}</td>
<td data-label="Type">${escapeHtml(a.contentType || "—")}</td><td data-label="Size" class="num">${formatBytes(Number(a.size))}</td></tr>`).join("")}</tbody></table></div>`
      : "";
    const headers = e.headers.length
      ? `<h2>Headers</h2><div class="table-wrap"><table class="data" id="headers"><caption class="sr-only">Headers as received</caption><tbody>${e.headers.map((h) =>
        `<tr><th scope="row">${escapeHtml(h.name)}</th><td><code>${escapeHtml(h.value)}</code></td></tr>`).join("")}</tbody></table></div>`
      : "";
    const body = `<p><a href="${CONSOLE_PREFIX}/received">← All received emails</a></p>
<h1>${escapeHtml(e.subject || "(no subject)")}</h1>
${reply_}${forwarded}
<div class="card"><h2 style="margin-top:0">Details</h2><table class="data"><tbody>${details}</tbody></table>
<p><a href="${base}/raw">Download the message as received (.eml)</a></p></div>
<h2>Reply</h2><p class="muted">What the sender wrote, quoted history and signature removed.</p><pre id="stripped-reply">${escapeHtml(e.strippedTextReply || "—")}</pre>
${attachments}
<h2>HTML</h2>${e.html ? `<p class="muted">Shown without scripts and without remote content (images, fonts, styles from elsewhere are not loaded).</p>${sandboxedFrame(e.html)}` : '<p class="muted">The message had no HTML part.</p>'}
<h2>Plain text</h2><pre id="text">${escapeHtml(e.text || "—")}</pre>
${headers}`;
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: e.subject || "Received email", session, active: "received", flash: request.consoleFlash, body }));
  });

  // Downloads of the signed-in workspace's own mail only (the workspace comes from the session),
  // always as attachments: a file a stranger chose never renders on the console's origin.
  scope.get("/received/:id/attachments/:attachmentId", async (request, reply) => {
    const session = sessionOf(request);
    const { id, attachmentId } = request.params as { id: string; attachmentId: string };
    const missing = () => refusal({ code: "not_found", message: "There is no such attachment in this workspace." });
    if (!RECEIVED_EMAIL_ID.test(id) || !RECEIVED_ATTACHMENT_ID.test(attachmentId)) throw missing();
    return sendReceivedContent(request, reply,
      (options) => deps.clients.receiving.getReceivedAttachment({ workspaceId: session.workspaceId, emailId: id, attachmentId }, options),
      { filename: "attachment", contentType: "application/octet-stream" }, missing);
  });

  scope.get("/received/:id/raw", async (request, reply) => {
    const session = sessionOf(request);
    const { id } = request.params as { id: string };
    const missing = () => refusal({ code: "not_found", message: "There is no such received email in this workspace." });
    if (!RECEIVED_EMAIL_ID.test(id)) throw missing();
    return sendReceivedContent(request, reply,
      (options) => deps.clients.receiving.getReceivedRaw({ workspaceId: session.workspaceId, emailId: id }, options),
      { filename: `${id}.eml`, contentType: "message/rfc822", fixed: true }, missing);
  });
}
