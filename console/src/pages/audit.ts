/**
 * The audit log (/console/audit), owners and admins: every state change of the workspace
 * through the API, the console and the CLI, newest first (ListAuditLog, kept a year), with
 * filters by actor ("member:mbr_…", "key:key_…" or a bare id), resource ("contact" or
 * "contact:<id>") and time (UTC dates), paged forward with the audit log's page token.
 * The markup is views/audit.ts.
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import type { ConsoleDeps } from "../deps.js";
import { consolePage } from "../layout.js";
import { sessionOf } from "../session.js";
import { auditView } from "../views/audit.js";
import { render } from "../views/html.js";
import { atLeast } from "@mailroom/http/roles.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";

const PAGE_SIZE = 50;
const FILTER = /^[A-Za-z0-9_.:@+-]{1,200}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A `YYYY-MM-DD` (UTC) from the form: its start, or (until) the start of the next day. */
function dayOf(value: string, field: string, endOfDay: boolean): Date | undefined {
  if (!value) return undefined;
  const d = DAY.test(value) ? new Date(`${value}T00:00:00Z`) : new Date(NaN);
  if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== value) throw refusal({ code: "invalid_request", status: 400, message: `${field}: a date as YYYY-MM-DD.` });
  return endOfDay ? new Date(d.getTime() + 86_400_000) : d;
}

function textFilter(value: unknown, field: string): string {
  const s = typeof value === "string" ? value.trim() : "";
  if (s && !FILTER.test(s)) throw refusal({ code: "invalid_request", status: 400, message: `${field}: letters, digits and _.:@+- only.` });
  return s;
}

export function registerAuditPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/audit", async (request, reply) => {
    const session = sessionOf(request);
    if (!atLeast(session.role, "ADMIN")) throw refusal({ code: "forbidden", status: 403, message: "Only owners and admins read the audit log." });
    const q = request.query as Record<string, unknown>;
    const actor = textFilter(q.actor, "Actor");
    const resource = textFilter(q.resource, "Resource");
    const sinceText = typeof q.since === "string" ? q.since : "";
    const untilText = typeof q.until === "string" ? q.until : "";
    const since = dayOf(sinceText, "From", false);
    const until = dayOf(untilText, "To", true);
    const pageToken = typeof q.page === "string" && q.page.length <= 512 ? q.page : "";
    const opts = rpcOptions(request);
    const [{ entries, nextPageToken }, { members }] = await Promise.all([
      deps.clients.team.listAuditLog({
        workspaceId: session.workspaceId, actor, resource, pageToken, limit: PAGE_SIZE,
        since: since ? timestampFromDate(since) : undefined, until: until ? timestampFromDate(until) : undefined,
      }, opts),
      deps.clients.team.listMembers({ workspaceId: session.workspaceId }, opts),
    ]);
    const emails = new Map(members.map((m) => [m.id, m.email]));
    const body = auditView(entries, emails, { actor, resource, since: sinceText, until: untilText }, pageToken, nextPageToken);
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Audit log", session, active: "audit", body: render(body), flash: request.consoleFlash }));
  });
}
