/**
 * Received emails (/console/received): the views. The handlers are pages/received.ts.
 *
 * A received message is a stranger's content: every value is escaped, and the HTML is shown
 * in a frame that can do nothing — `sandbox` without allow-scripts or allow-same-origin (no
 * script runs, the frame is a unique origin, no form, popup or top navigation), its document
 * from `srcdoc` (never served from our origin), and a Content-Security-Policy at its top that
 * fetches nothing (no remote image, font or stylesheet: no tracking pixel fires). The
 * console's own CSP (frame-src 'none') also stops a clicked link from loading in the frame.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { ReceivedAddress, ReceivedEmail } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { formatBytes } from "./emails.js";
import { CONSOLE_PREFIX, consoleUrl } from "../layout.js";
import { html, type Html } from "./html.js";
import { badge, time } from "./page-parts.js";

const date = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);

/** The policy at the top of the frame's document: inline styles and embedded images only. */
export const FRAME_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data: cid:";

/** The frame's whole document: the policy first, so it holds before any of the message is parsed. */
export function frameDocument(messageHtml: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${FRAME_CSP}"><meta name="referrer" content="no-referrer"></head><body>${messageHtml}</body></html>`;
}

/** The received HTML in a frame that runs and fetches nothing (see the file's comment); srcdoc is escaped as any attribute. */
export function sandboxedFrame(messageHtml: string): Html {
  return html`<iframe class="mail" id="received-html" title="The email's HTML (scripts and remote content blocked)" sandbox="" referrerpolicy="no-referrer" srcdoc="${frameDocument(messageHtml)}"></iframe>`;
}

const addressText = (a: ReceivedAddress | undefined) => (a ? (a.name ? `${a.name} <${a.address}>` : a.address) : "");
const addressesText = (list: ReceivedAddress[]) => list.map(addressText).join(", ");

/** The badge of a reply: what it answers, linked to its page. */
export function replyBadge(e: ReceivedEmail): Html | "" {
  const r = e.inReplyTo;
  if (r?.emailId) return html`<a href="${CONSOLE_PREFIX}/emails/${encodeURIComponent(r.emailId)}" class="reply-to">${badge("Reply to an email", "info")}</a>`;
  if (r?.broadcastId) return html`<a href="${CONSOLE_PREFIX}/broadcasts/${encodeURIComponent(r.broadcastId)}" class="reply-to">${badge("Reply to a broadcast", "info")}</a>`;
  return "";
}

/** The list's filters, as typed (checked by the handler). */
export interface ReceivedQuery {
  to: string;
  from: string;
  since: string;
  cursor: string;
}

function filterForm(q: ReceivedQuery): Html {
  return html`<form method="get" action="${CONSOLE_PREFIX}/received" class="card" role="search" aria-label="Search received emails">
<div class="row">
<div class="field" style="flex:1 1 12rem"><label for="to">To</label><input id="to" name="to" type="search" value="${q.to}" placeholder="support@in.example.com" style="width:100%" autocomplete="off"></div>
<div class="field" style="flex:1 1 12rem"><label for="from">From</label><input id="from" name="from" type="search" value="${q.from}" placeholder="ann@example.com" style="width:100%" autocomplete="off"></div>
<div class="field"><label for="since">Since</label><input id="since" name="since" type="date" value="${q.since}"></div>
<div class="field"><button type="submit">Search</button></div>
</div></form>`;
}

function row(e: ReceivedEmail): Html {
  return html`<tr><td data-label="From">${addressText(e.from)}</td>
<td data-label="To">${e.envelopeTo.join(", ") || addressesText(e.to)}</td>
<td data-label="Subject"><a href="${CONSOLE_PREFIX}/received/${encodeURIComponent(e.id)}">${e.subject || "(no subject)"}</a> ${replyBadge(e)}</td>
<td data-label="Received">${time(date(e.receivedAt))}</td>
<td data-label="Attachments" class="num">${e.attachments.length}</td></tr>`;
}

/** A page of received emails, newest first, with the filters and the pager. */
export function receivedListView(q: ReceivedQuery, emails: ReceivedEmail[], nextCursor: string): Html {
  const filtered = q.to || q.from || q.since;
  const table = emails.length
    ? html`<div class="table-wrap"><table class="data stack" id="received"><caption class="sr-only">Received emails, newest first</caption>
<thead><tr><th scope="col">From</th><th scope="col">To</th><th scope="col">Subject</th><th scope="col">Received</th><th scope="col" class="num">Attachments</th></tr></thead>
<tbody>${emails.map(row)}</tbody></table></div>`
    : html`<p class="card">${filtered ? "No received email matches these filters." : html`Nothing received yet. Add an <a href="${CONSOLE_PREFIX}/inbound">inbound domain</a> and a rule to receive mail.`}</p>`;
  const pager = [
    q.cursor ? html`<a class="button secondary" href="${consoleUrl("/received", { ...q, cursor: undefined })}">Newest</a>` : "",
    nextCursor ? html`<a class="button secondary" rel="next" href="${consoleUrl("/received", { ...q, cursor: nextCursor })}">Older emails</a>` : "",
  ].filter((a) => a !== "");
  return html`<h1>Received emails</h1>${filterForm(q)}<p class="muted" role="status">${emails.length} email${emails.length === 1 ? "" : "s"} shown${filtered ? " (filtered)" : ""}.</p>${table}${pager.length ? html`<nav class="actions" aria-label="Pages">${pager}</nav>` : ""}`;
}

/** One received email: details, what it answers, the stripped reply, attachments, HTML, text and headers. */
export function receivedEmailView(e: ReceivedEmail): Html {
  const base = `${CONSOLE_PREFIX}/received/${encodeURIComponent(e.id)}`;
  const details: Array<[string, string]> = [
    ["From", addressText(e.from)],
    ["To", addressesText(e.to)],
    ...(e.cc.length ? [["Cc", addressesText(e.cc)] as [string, string]] : []),
    ["Envelope recipients", e.envelopeTo.join(", ")],
    ["Envelope sender", e.mailFrom || "(none: a bounce)"],
    ["Subject", e.subject],
    ["Message-ID", e.messageId],
    ...(e.mailboxHash ? [["Plus-address tag (mailboxHash)", e.mailboxHash] as [string, string]] : []),
    ...(e.spamScore !== undefined ? [["Spam score", String(e.spamScore)] as [string, string]] : []),
    ["Size", formatBytes(Number(e.size))],
    ["Rule", e.action ? `${e.action}${e.ruleId ? ` (${e.ruleId})` : ""}` : "—"],
    ["Received email id", e.id],
  ];
  const forwarded = e.forwardedEmailId
    ? html`<p>Forwarded as <a href="${CONSOLE_PREFIX}/emails/${encodeURIComponent(e.forwardedEmailId)}">${e.forwardedEmailId}</a> (its delivery shows there).</p>`
    : "";
  const answers = replyBadge(e);
  const replyTo = answers ? html`<p>${answers}${e.inReplyTo?.contactId ? html` <a href="${CONSOLE_PREFIX}/contacts/${encodeURIComponent(e.inReplyTo.contactId)}">the contact</a>` : ""}</p>` : "";
  const attachments = e.attachments.length
    ? html`<h2>Attachments</h2><div class="table-wrap"><table class="data stack" id="attachments"><caption class="sr-only">Attachments of the email</caption>
<thead><tr><th scope="col">File</th><th scope="col">Type</th><th scope="col" class="num">Size</th></tr></thead><tbody>${e.attachments.map((a) =>
      html`<tr><td data-label="File"><a href="${base}/attachments/${encodeURIComponent(a.id)}" download="${a.filename}">${a.filename || a.id}</a>${a.disposition === "inline" ? html` <span class="muted">(inline)</span>` : ""}</td>
<td data-label="Type">${a.contentType || "—"}</td><td data-label="Size" class="num">${formatBytes(Number(a.size))}</td></tr>`)}</tbody></table></div>`
    : "";
  const headers = e.headers.length
    ? html`<h2>Headers</h2><div class="table-wrap"><table class="data" id="headers"><caption class="sr-only">Headers as received</caption><tbody>${e.headers.map((h) =>
      html`<tr><th scope="row">${h.name}</th><td><code>${h.value}</code></td></tr>`)}</tbody></table></div>`
    : "";
  return html`<p><a href="${CONSOLE_PREFIX}/received">← All received emails</a></p>
<h1>${e.subject || "(no subject)"}</h1>
${replyTo}${forwarded}
<div class="card"><h2 style="margin-top:0">Details</h2><table class="data"><tbody>${details.map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${v || "—"}</td></tr>`)}</tbody></table>
<p><a href="${base}/raw">Download the message as received (.eml)</a></p></div>
<h2>Reply</h2><p class="muted">What the sender wrote, quoted history and signature removed.</p><pre id="stripped-reply">${e.strippedTextReply || "—"}</pre>
${attachments}
<h2>HTML</h2>${e.html ? html`<p class="muted">Shown without scripts and without remote content (images, fonts, styles from elsewhere are not loaded).</p>${sandboxedFrame(e.html)}` : html`<p class="muted">The message had no HTML part.</p>`}
<h2>Plain text</h2><pre id="text">${e.text || "—"}</pre>
${headers}`;
}
