/**
 * Inbound: the domains the workspace receives mail for (DESIGN §10.4), each with the MX record
 * to publish, its status and a re-check that runs the inbound unit's real MX lookup; per
 * domain its rules (which addresses are taken, and whether their mail becomes a webhook, is
 * forwarded or only kept), with forms to add and delete them. The requests are checked with
 * the API's own schemas (routes/inbound-schema.ts), so a refusal reads the same in both.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { InboundDomain, InboundRule } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { bodyFromError, invalid, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { INBOUND_DOMAIN_ID, INBOUND_RULE_ID, createInboundDomainSchema, createInboundRuleSchema } from "@mailroom/http/inbound-schema.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { CONSOLE_PREFIX, consolePage, escapeHtml, formatTime, statusBadge } from "./layout.js";
import { mayPost, seeOther, sessionOf, setFlash } from "./session.js";

const date = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);
const html = (reply: FastifyReply, page: string) => reply.type("text/html; charset=utf-8").send(page);

const ACTION_WORDS: Record<string, string> = {
  webhook: "Webhook: an EMAIL_RECEIVED event",
  forward: "Forward",
  store: "Store: kept for the API only",
};

/** The same 404 for an id that cannot exist and for another workspace's domain. */
function domainIdOf(request: FastifyRequest): string {
  const id = String((request.params as { id?: string }).id ?? "");
  if (!INBOUND_DOMAIN_ID.test(id)) throw refusal({ code: "not_found", message: "There is no such inbound domain in this workspace." });
  return id;
}

function form(request: FastifyRequest): Record<string, string> {
  const body = (request.body ?? {}) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, typeof v === "string" ? v : ""]));
}

/** Runs a form's action; a refusal the user can fix comes back as a flash on `back`, not an error page. */
async function formAction(reply: FastifyReply, back: string, action: () => Promise<string>): Promise<FastifyReply> {
  try {
    return seeOther(reply, await action());
  } catch (err) {
    const body = bodyFromError(err);
    if (body.statusCode >= 500 || body.statusCode === 404) throw err;
    setFlash(reply, { kind: "error", message: body.message });
    return seeOther(reply, back);
  }
}

function requireEdit(request: FastifyRequest): void {
  if (!sessionOf(request).canEdit) throw refusal({ code: "forbidden", status: 403, message: "This API key can only view the console." });
}

function statusOf(d: InboundDomain): string {
  if (d.status === "verified") return statusBadge("Verified", "ok");
  if (d.lastCheckedAt) return statusBadge("MX not found", "bad");
  return statusBadge("Pending DNS", "warn");
}

const copyButton = (text: string, what: string) =>
  `<button type="button" class="secondary small" data-copy="${escapeHtml(text)}" hidden aria-label="Copy ${escapeHtml(what)}">Copy</button>`;

/** The MX record as a DNS provider asks for it: name, type, priority, host. */
function mxTable(d: InboundDomain): string {
  return `<div class="table-wrap"><table class="data stack" id="mx-record"><caption class="sr-only">MX record for ${escapeHtml(d.domain)}</caption>
<thead><tr><th scope="col">Type</th><th scope="col">Name</th><th scope="col" class="num">Priority</th><th scope="col">Mail server</th></tr></thead>
<tbody><tr><td data-label="Type"><strong>MX</strong></td>
<td data-label="Name"><code class="value one-line">${escapeHtml(d.domain)}</code> ${copyButton(d.domain, "name of the MX record")}</td>
<td data-label="Priority" class="num">${d.mxPriority}</td>
<td data-label="Mail server"><code class="value one-line">${escapeHtml(d.mxHost)}</code> ${copyButton(d.mxHost, "host of the MX record")}</td></tr></tbody></table></div>`;
}

function ruleRow(domainId: string, r: InboundRule, canDelete: string): string {
  const match = r.match === "*" ? "Any address (*)" : r.match.endsWith("+*") ? `${r.match} (plus-addresses)` : r.match;
  const action = r.action === "forward" ? `Forward to <code>${escapeHtml(r.forwardTo)}</code>` : escapeHtml(ACTION_WORDS[r.action] ?? r.action);
  const remove = canDelete
    ? `<form method="post" action="${CONSOLE_PREFIX}/inbound/${encodeURIComponent(domainId)}/rules/${encodeURIComponent(r.id)}/delete" data-confirm="Delete the rule ${escapeHtml(r.match)}? Mail only it takes is refused from then on.">${canDelete}<button type="submit" class="danger small" aria-label="Delete the rule ${escapeHtml(r.match)}">Delete</button></form>`
    : "";
  return `<tr><td data-label="Addresses"><code>${escapeHtml(match)}</code></td><td data-label="Action">${action}</td>
<td data-label="Added">${formatTime(date(r.createdAt))}</td>${canDelete ? `<td data-label="">${remove}</td>` : ""}</tr>`;
}

function ruleForm(session: ReturnType<typeof sessionOf>, d: InboundDomain): string {
  return `<form method="post" action="${CONSOLE_PREFIX}/inbound/${encodeURIComponent(d.id)}/rules" class="card" id="new-rule">${csrfField(session)}
<h3 style="margin-top:0">Add a rule</h3>
<div class="row">
<div class="field" style="flex:1 1 12rem"><label for="match">Addresses</label>
<input id="match" name="match" required autocomplete="off" spellcheck="false" placeholder="support, reply+* or *" style="width:100%" aria-describedby="matchHelp"></div>
<div class="field"><label for="action">Action</label><select id="action" name="action">
<option value="webhook">Webhook (EMAIL_RECEIVED)</option><option value="forward">Forward</option><option value="store">Store only</option></select></div>
<div class="field" style="flex:1 1 14rem"><label for="forwardTo">Forward to (for Forward)</label>
<input id="forwardTo" name="forwardTo" type="email" autocomplete="off" placeholder="team@example.com" style="width:100%"></div>
<div class="field"><button type="submit">Add rule</button></div></div>
<p id="matchHelp" class="muted"><code>support</code> takes support@${escapeHtml(d.domain)}; <code>reply+*</code> takes reply+<em>tag</em>@${escapeHtml(d.domain)} (the tag is given as <code>mailboxHash</code>); <code>*</code> takes every other address. Addresses no rule takes are refused. Forward needs an address.</p></form>`;
}

export function registerInboundPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/inbound", async (request, reply) => {
    const session = sessionOf(request);
    const { domains } = await deps.clients.receiving.listInboundDomains({ workspaceId: session.workspaceId }, rpcOptions(request));
    const table = domains.length
      ? `<div class="table-wrap"><table class="data stack" id="inbound-domains"><caption class="sr-only">Inbound domains</caption>
<thead><tr><th scope="col">Domain</th><th scope="col">Status</th><th scope="col">MX record to publish</th><th scope="col">Last checked</th></tr></thead><tbody>
${domains.map((d) => `<tr><td data-label="Domain"><a href="${CONSOLE_PREFIX}/inbound/${encodeURIComponent(d.id)}">${escapeHtml(d.domain)}</a></td>
<td data-label="Status">${statusOf(d)}</td>
<td data-label="MX record"><code>${escapeHtml(d.domain)} MX ${d.mxPriority} ${escapeHtml(d.mxHost)}</code></td>
<td data-label="Last checked">${formatTime(date(d.lastCheckedAt))}</td></tr>`).join("")}
</tbody></table></div>`
      : `<p class="muted">No inbound domains yet. Add one to receive mail at its addresses.</p>`;
    const add = mayPost(session, "/console/inbound")
      ? `<form method="post" action="${CONSOLE_PREFIX}/inbound" class="card">${csrfField(session)}
<div class="row"><div class="field" style="flex:1 1 16rem"><label for="domain">Receive mail for a domain</label>
<input id="domain" name="domain" required inputmode="url" autocomplete="off" spellcheck="false" placeholder="in.example.com" style="width:100%" aria-describedby="domainHelp"></div>
<div class="field"><button type="submit">Add domain</button></div></div>
<p id="domainHelp" class="muted">You will get the MX record to publish. A subdomain (<code>in.example.com</code>) keeps your mailboxes where they are.</p></form>`
      : "";
    return html(reply, consolePage({
      title: "Inbound", session, active: "inbound", flash: request.consoleFlash,
      body: `<h1>Inbound domains</h1>${add}${table}<p class="muted"><a href="${CONSOLE_PREFIX}/received">Received emails →</a></p>`,
    }));
  });

  scope.post("/inbound", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    return formAction(reply, `${CONSOLE_PREFIX}/inbound`, async () => {
      const parsed = createInboundDomainSchema.safeParse({ domain: form(request).domain ?? "" });
      if (!parsed.success) throw refusal(invalid(parsed.error));
      const { domain } = await deps.clients.receiving.createInboundDomain({ workspaceId: session.workspaceId, domain: parsed.data.domain }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${domain?.domain ?? parsed.data.domain} added. Publish its MX record, re-check, then add a rule.` });
      return domain ? `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(domain.id)}` : `${CONSOLE_PREFIX}/inbound`;
    });
  });

  scope.get("/inbound/:id", async (request, reply) => {
    const session = sessionOf(request);
    const id = domainIdOf(request);
    const { domain: d } = await deps.clients.receiving.getInboundDomain({ workspaceId: session.workspaceId, id }, rpcOptions(request));
    if (!d) throw refusal({ code: "not_found", message: "There is no such inbound domain in this workspace." });
    const { rules } = await deps.clients.receiving.listInboundRules({ workspaceId: session.workspaceId, domainId: id }, rpcOptions(request));
    const base = `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(d.id)}`;
    const failure = d.status !== "verified" && d.failure ? `<p class="flash error" role="status">Last check: ${escapeHtml(d.failure)}</p>` : "";
    const verify = mayPost(session, "/console/inbound/:id/verify")
      ? `<form method="post" action="${base}/verify">${csrfField(session)}<button type="submit">Re-check MX now</button></form>`
      : "";
    const remove = mayPost(session, "/console/inbound/:id/delete")
      ? `<form method="post" action="${base}/delete" data-confirm="Stop receiving mail for ${escapeHtml(d.domain)}? Its rules are deleted; emails already received are kept.">${csrfField(session)}<button type="submit" class="danger">Delete domain</button></form>`
      : "";
    const canDelete = mayPost(session, "/console/inbound/:id/rules/:ruleId/delete") ? csrfField(session) : "";
    const rulesTable = rules.length
      ? `<div class="table-wrap"><table class="data stack" id="rules"><caption class="sr-only">Rules of ${escapeHtml(d.domain)}</caption>
<thead><tr><th scope="col">Addresses</th><th scope="col">Action</th><th scope="col">Added</th>${canDelete ? '<th scope="col"><span class="sr-only">Delete</span></th>' : ""}</tr></thead>
<tbody>${rules.map((r) => ruleRow(d.id, r, canDelete)).join("")}</tbody></table></div>`
      : `<p class="card" id="rules">No rules yet: every address of ${escapeHtml(d.domain)} is refused until a rule takes it.</p>`;
    const body = `<p><a href="${CONSOLE_PREFIX}/inbound">← All inbound domains</a></p>
<h1>${escapeHtml(d.domain)}</h1>
<div class="card"><p>Status: <strong id="inbound-status">${statusOf(d)}</strong></p>
<p class="muted">Added: ${formatTime(date(d.createdAt))} · Verified: ${formatTime(date(d.verifiedAt))} · Last checked: ${formatTime(date(d.lastCheckedAt))}</p>${failure}
<div class="actions">${verify}${remove}</div></div>
<h2>MX record to publish</h2>
<p class="muted">Add this record at your DNS provider; mail is taken once the re-check finds it. Some providers want only the part of the name before your own domain.</p>
${mxTable(d)}
<h2>Rules</h2>${rulesTable}${mayPost(session, "/console/inbound/:id/rules") ? ruleForm(session, d) : ""}`;
    return html(reply, consolePage({ title: d.domain, session, active: "inbound", flash: request.consoleFlash, body }));
  });

  scope.post("/inbound/:id/verify", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    const id = domainIdOf(request);
    const page = `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(id)}`;
    return formAction(reply, page, async () => {
      const { domain: d } = await deps.clients.receiving.verifyInboundDomain({ workspaceId: session.workspaceId, id }, { ...rpcOptions(request), timeoutMs: 20_000 });
      setFlash(reply, d?.status === "verified"
        ? { kind: "ok", message: `${d.domain} is verified: its mail is taken as its rules say.` }
        : { kind: "error", message: `${d?.domain ?? "The domain"} is not verified yet${d?.failure ? `: ${d.failure}` : "."}` });
      return page;
    });
  });

  scope.post("/inbound/:id/delete", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    const id = domainIdOf(request);
    return formAction(reply, `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(id)}`, async () => {
      await deps.clients.receiving.deleteInboundDomain({ workspaceId: session.workspaceId, id }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "The inbound domain and its rules are deleted: its mail is refused from now on." });
      return `${CONSOLE_PREFIX}/inbound`;
    });
  });

  scope.post("/inbound/:id/rules", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    const id = domainIdOf(request);
    const page = `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(id)}`;
    return formAction(reply, page, async () => {
      const f = form(request);
      // The form always sends the address field; an empty one is no address.
      const parsed = createInboundRuleSchema.safeParse({ match: f.match ?? "", action: f.action ?? "", ...(f.forwardTo?.trim() ? { forwardTo: f.forwardTo } : {}) });
      if (!parsed.success) throw refusal(invalid(parsed.error));
      const { rule } = await deps.clients.receiving.createInboundRule({ workspaceId: session.workspaceId, domainId: id, ...parsed.data }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Rule ${rule?.match ?? parsed.data.match} added.` });
      return page;
    });
  });

  scope.post("/inbound/:id/rules/:ruleId/delete", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    const id = domainIdOf(request);
    const ruleId = String((request.params as { ruleId?: string }).ruleId ?? "");
    if (!INBOUND_RULE_ID.test(ruleId)) throw refusal({ code: "not_found", message: "There is no such rule in this workspace." });
    const page = `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(id)}`;
    return formAction(reply, page, async () => {
      await deps.clients.receiving.deleteInboundRule({ workspaceId: session.workspaceId, domainId: id, id: ruleId }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "Rule deleted." });
      return page;
    });
  });
}
