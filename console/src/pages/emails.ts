/**
 * Emails: a searchable list (recipient, status, groupBy, creation date; EmailService.ListEmails)
 * and each email's page: status, timeline of what happened to it, its tags and attachments
 * (each downloadable), and its content rendered in a sandboxed frame (no scripts, no
 * same-origin access, no forms) plus the plain text. The markup is views/emails.ts.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { ListEmailsRequestSchema } from "@mailroom/proto/email/v1/email_pb.js";
import { CompiledMessageSchema, CompiledTemplateSchema, SegmentSchema, type CompiledMessage, type CompiledTemplate, type Segment } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { mergeMessage } from "@mailroom/content/merge.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";
import { EMAIL_ID } from "@mailroom/http/constants.js";
import { contentDisposition } from "@mailroom/http/received-content.js";
import type { ConsoleDeps } from "../deps.js";
import { consolePage } from "../layout.js";
import { sessionOf } from "../session.js";
import { html, render } from "../views/html.js";
import { STATUSES, emailListView, emailPageView, type ListQuery, type ViewedContent } from "../views/emails.js";

/** A transparent 1×1 GIF in place of the open pixel. */
const BLANK_GIF = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

/**
 * The compiled email for looking at, not for sending: each tracked link is the address it
 * leads to (what the email's link redirects to), and the open pixel is a blank image. So
 * the view shows real links (never a placeholder host), and looking records no open or click.
 */
export function forViewing(compiled: CompiledMessage): CompiledMessage {
  const literal = (value: string): Segment => create(SegmentSchema, { part: { case: "literal", value } });
  const template = (t: CompiledTemplate | undefined, isHtml: boolean) => create(CompiledTemplateSchema, {
    segments: (t?.segments ?? []).map((s) => {
      if (s.part.case === "link") {
        const url = compiled.links[s.part.value]?.url ?? "";
        // Into the email's HTML as an attribute value: escaped as the views escape.
        return literal(isHtml ? render(html`${url}`) : url);
      }
      return s.part.case === "openPixel" ? literal(BLANK_GIF) : s;
    }),
  });
  return create(CompiledMessageSchema, { ...compiled, html: template(compiled.html, true), text: template(compiled.text, false) });
}
const DAY = /^\d{4}-\d{2}-\d{2}$/;

const ATTACHMENT_INDEX = /^\d{1,4}$/;
const TAG = /^[A-Za-z0-9_-]{1,256}:[A-Za-z0-9_-]{1,256}$/;

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
    return reply.type("text/html; charset=utf-8").send(consolePage({
      title: "Emails", session, active: "emails", flash: request.consoleFlash, body: render(emailListView(q, res.emails, res.nextCursor)),
    }));
  });

  scope.get("/emails/:id", async (request, reply) => {
    const session = sessionOf(request);
    const id = (request.params as { id: string }).id;
    // Ids that cannot exist, and other workspaces' ids, are the same 404.
    if (!EMAIL_ID.test(id)) throw refusal({ code: "email_not_found", message: "There is no such email in this workspace." });
    const { email: e } = await deps.clients.email.getEmail({ workspaceId: session.workspaceId, id }, rpcOptions(request));
    if (!e) throw refusal({ code: "email_not_found", message: "There is no such email in this workspace." });

    let content: ViewedContent;
    try {
      const { compiled } = await deps.clients.email.getEmailContent({ workspaceId: session.workspaceId, id }, rpcOptions(request));
      if (!compiled) throw new ConnectError("no content", Code.NotFound);
      // Merged for display only: tracked links show where they lead and the open pixel is
      // blank, so looking at an email records no open or click; the unsubscribe and manage
      // links are the recipient's own, as sent (their pages ask before they change anything).
      const merged = mergeMessage(forViewing(compiled), { email: e.to, messageId: e.messageId }, { secret: deps.config.secret, publicUrl: deps.config.publicUrl });
      content = { html: merged.html, text: merged.text };
    } catch (err) {
      const gone = (err instanceof ConnectError && err.code === Code.NotFound) || errorInfoOf(err)?.code === "email_not_found";
      if (!gone) throw err;
      content = undefined;
    }

    return reply.type("text/html; charset=utf-8").send(consolePage({ title: e.subject || "Email", session, active: "emails", flash: request.consoleFlash, body: render(emailPageView(e, content)) }));
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
