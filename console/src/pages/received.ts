/**
 * Received: the emails the workspace received (DESIGN §10.4), newest first and filtered, each
 * with a badge linking the email or broadcast it answers; and each email's page: its headers,
 * the stripped reply, the text, its attachments (downloads) and the HTML (in a sandboxed
 * frame: views/received.ts, the markup, says how).
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";
import { RECEIVED_ATTACHMENT_ID, RECEIVED_EMAIL_ID } from "@mailroom/http/received-emails-schema.js";
import { sendReceivedContent } from "@mailroom/http/received-content.js";
import type { ConsoleDeps } from "../deps.js";
import { consolePage } from "../layout.js";
import { sessionOf } from "../session.js";
import { render } from "../views/html.js";
import { receivedEmailView, receivedListView, type ReceivedQuery } from "../views/received.js";

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const PAGE_SIZE = 25;

function readQuery(raw: Record<string, unknown>): ReceivedQuery {
  const str = (k: string) => (typeof raw[k] === "string" ? (raw[k] as string).trim() : "");
  const q = { to: str("to"), from: str("from"), since: str("since"), cursor: str("cursor") };
  for (const k of ["to", "from"] as const) {
    if (q[k] && (q[k].length > 320 || !/^[^\s@]+@[^\s@]+$/.test(q[k]))) throw refusal({ code: "invalid_request", message: `“${k === "to" ? "To" : "From"}” must be a whole email address.` });
  }
  if (q.since && (!DAY.test(q.since) || Number.isNaN(Date.parse(`${q.since}T00:00:00Z`)))) throw refusal({ code: "invalid_request", message: "“Since” must be a date (YYYY-MM-DD)." });
  if (q.cursor.length > 200) throw refusal({ code: "invalid_request", message: "That page link is not valid." });
  return q;
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
    return reply.type("text/html; charset=utf-8").send(consolePage({
      title: "Received", session, active: "received", flash: request.consoleFlash, body: render(receivedListView(q, res.emails, res.nextCursor)),
    }));
  });

  scope.get("/received/:id", async (request, reply) => {
    const session = sessionOf(request);
    const id = (request.params as { id: string }).id;
    // Ids that cannot exist, and other workspaces' ids, are the same 404.
    if (!RECEIVED_EMAIL_ID.test(id)) throw refusal({ code: "received_email_not_found", message: "There is no such received email in this workspace." });
    const { email: e } = await deps.clients.receiving.getReceivedEmail({ workspaceId: session.workspaceId, id }, rpcOptions(request));
    if (!e) throw refusal({ code: "received_email_not_found", message: "There is no such received email in this workspace." });
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: e.subject || "Received email", session, active: "received", flash: request.consoleFlash, body: render(receivedEmailView(e)) }));
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
