/**
 * The API keys page (/console/keys): the workspace's keys (name, role and scopes, owner,
 * created, last used, revoked), a form to create one (name, role, owner member) whose answer shows the
 * secret once, and a revoke button (with a confirmation) per key.
 *
 *   GET  /keys                   the list, and the create form for those who manage keys
 *   POST /keys                   create: the answer (200, not a redirect) shows the secret once
 *   POST /keys/:keyId/revoke     revoke, 303 back to the list
 *
 * Who: everyone signed in sees the list (prefixes only, never a secret); owners and admins
 * (and an api_user key session, as through /v1) create and revoke (roles.ts). Nobody creates
 * a key above their own role (requireMayGrant) or revokes one above it. The directory
 * decides the rest: an ADMIN key needs an owner who is OWNER or ADMIN, an owner must be an
 * active member; its refusals show on the form.
 *
 * "Last used" is the directory's record of the key's last authentication, to the minute
 * (written at most once a minute per key, not per request).
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ApiKey } from "@mailroom/proto/directory/v1/directory_pb.js";
import type { Member } from "@mailroom/proto/directory/v1/team_pb.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { ROLES, atLeast, consolePrincipal, requireMayGrant, type Role } from "@mailroom/http/roles.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, type Flash } from "./layout.js";
import { mayPost, roleOf, seeOther, sessionOf, setFlash } from "./session.js";
import type { ConsoleSession } from "./types.js";

const KEY_ID = /^key_[0-9A-Za-z]{1,64}$/;
const MEMBER_ID = /^mbr_[0-9A-Za-z]{1,64}$/;
const NAME_MAX = 200;
const html = (reply: FastifyReply, page: string, status = 200) => reply.code(status).type("text/html; charset=utf-8").send(page);
const str = (body: unknown, name: string): string => {
  const v = (body as Record<string, unknown> | undefined)?.[name];
  return typeof v === "string" ? v : "";
};

/** What the create form holds (typed back after a refusal). */
export interface KeyFormValues {
  name: string;
  role: Role;
  owner: string;
}

/** Key roles the directory knows (OWNER is a member's only), the session's own and below. */
export const grantableKeyRoles = (session: Pick<ConsoleSession, "role">): Role[] =>
  ROLES.filter((r) => r !== "OWNER" && atLeast(session.role, r)).reverse();

const ROLE_WORDS: Record<string, string> = {
  ADMIN: "changes and sends, and reads the audit log (needs an owner who is OWNER or ADMIN)",
  EDITOR: "reads, changes and sends",
  VIEWER: "reads only",
};

/** A key's role as the directory states it, else from its scopes. */
const keyRole = (k: ApiKey): Role => roleOf(k.role) ?? (k.scopes.includes("api_user") ? "EDITOR" : "VIEWER");

/** A refusal of the directory as a message for the form; a 5xx is rethrown (the error page). */
function formMessage(err: unknown): { message: string; status: number } {
  const body = bodyFromError(err);
  if (body.statusCode >= 500) throw err;
  const messages: Record<string, string> = {
    member_not_found: "The owner is no active member of this workspace.",
    invalid_role: body.message,
  };
  return { message: messages[body.code ?? ""] ?? body.message, status: body.statusCode };
}

function keyRow(k: ApiKey, owners: Map<string, Member>, session: ConsoleSession, csrf: string, manage: boolean): string {
  const role = keyRole(k);
  const owner = k.ownerMemberId ? owners.get(k.ownerMemberId) : undefined;
  const ownerText = !k.ownerMemberId ? `<span class="muted">none</span>`
    : owner ? escapeHtml(owner.email) : `${escapeHtml(k.ownerMemberId)} <span class="muted">(no longer a member: the key does not work)</span>`;
  const name = escapeHtml(k.name) || `<span class="muted">(no name)</span>`;
  const you = session.kind === "key" && session.keyId === k.id ? ` ${statusBadge("This session", "info")}` : "";
  const status = k.revokedAt ? `${statusBadge("Revoked", "bad")} ${formatTime(timestampDate(k.revokedAt))}` : statusBadge("Active", "ok");
  const label = k.name || k.prefix;
  const revoke = manage
    ? `<td data-label="Action">${!k.revokedAt && atLeast(session.role, role)
      ? `<form method="post" action="${consoleUrl(`/keys/${k.id}/revoke`)}" data-confirm="Revoke the key ${escapeHtml(label)}? Whatever uses it stops working at once; this cannot be undone.">${csrf}<button type="submit" class="danger small" aria-label="Revoke the key ${escapeHtml(label)}">Revoke</button></form>`
      : ""}</td>`
    : "";
  return `<tr data-key="${escapeHtml(k.id)}"><td data-label="Name">${name}${you}<br><code>${escapeHtml(k.prefix)}…</code></td>
<td data-label="Role">${role}<br><span class="muted">${k.scopes.map((s) => escapeHtml(s)).join(", ") || "no scope"}</span></td>
<td data-label="Owner">${ownerText}</td><td data-label="Created">${formatTime(k.createdAt && timestampDate(k.createdAt))}</td>
<td data-label="Last used" data-last-used>${k.lastUsedAt ? formatTime(timestampDate(k.lastUsedAt)) : `<span class="muted">Never</span>`}</td>
<td data-label="Status">${status}</td>${revoke}</tr>`;
}

function createForm(session: ConsoleSession, members: Member[], values: KeyFormValues): string {
  const roles = grantableKeyRoles(session).map((r) =>
    `<option value="${r}"${r === values.role ? " selected" : ""}>${r}: ${escapeHtml(ROLE_WORDS[r] ?? "")}</option>`).join("");
  const active = members.filter((m) => m.status === "ACTIVE");
  const owners = [`<option value=""${values.owner ? "" : " selected"}>No owner</option>`, ...active.map((m) =>
    `<option value="${escapeHtml(m.id)}"${m.id === values.owner ? " selected" : ""}>${escapeHtml(m.email)} (${escapeHtml(m.role)})</option>`)].join("");
  return `<form method="post" action="${consoleUrl("/keys")}" class="card" id="create-key" aria-labelledby="create-h">${csrfField(session)}
<div class="grid"><div class="field"><label for="key-name">Name</label><input id="key-name" name="name" required maxlength="${NAME_MAX}" value="${escapeHtml(values.name)}" style="width:100%" placeholder="e.g. Production server" autocomplete="off"></div>
<div class="field"><label for="key-role">Role</label><select id="key-role" name="role" style="width:100%">${roles}</select></div>
<div class="field"><label for="key-owner">Owner</label><select id="key-owner" name="owner" style="width:100%" aria-describedby="key-owner-h">${owners}</select>
<p class="muted" id="key-owner-h" style="margin:.25rem 0 0">A key never does more than its owner, and stops working when the owner leaves.</p></div></div>
<div class="actions"><button type="submit">Create key</button></div></form>`;
}

export function registerKeyPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const directory = () => deps.clients.directory;
  const manages = (session: ConsoleSession) => mayPost(session, "/console/keys");
  const requireManager = (session: ConsoleSession) => {
    if (!manages(session)) throw refusal({ code: "forbidden", status: 403, message: "Only owners and admins manage API keys." });
  };

  const listPage = async (request: FastifyRequest, flash?: Flash, values?: KeyFormValues) => {
    const session = sessionOf(request);
    const opts = rpcOptions(request);
    const [{ apiKeys }, { members }] = await Promise.all([
      directory().listApiKeys({ workspaceId: session.workspaceId }, opts),
      deps.clients.team.listMembers({ workspaceId: session.workspaceId }, opts),
    ]);
    const owners = new Map(members.map((m) => [m.id, m]));
    const manage = manages(session);
    const csrf = csrfField(session);
    // Active keys first, each group newest first.
    const sorted = [...apiKeys].sort((a, b) => Number(!!a.revokedAt) - Number(!!b.revokedAt) || Number((b.createdAt?.seconds ?? 0n) - (a.createdAt?.seconds ?? 0n)));
    const rows = sorted.map((k) => keyRow(k, owners, session, csrf, manage)).join("");
    const form = manage
      ? `<h2 id="create-h">Create a key</h2>${createForm(session, members, values ?? { name: "", role: grantableKeyRoles(session).includes("EDITOR") ? "EDITOR" : "VIEWER", owner: session.memberId ?? "" })}
<p class="muted">The key is shown once, on the page that answers; only its start is kept readable.</p>`
      : `<p class="muted">Only owners and admins create and revoke keys.</p>`;
    const body = `<h1>API keys</h1>
<p class="muted">Keys of this workspace for the <code>/v1</code> API. Only their start is shown. "Last used" is to the minute.</p>
${rows ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">API keys, active first</caption>
<thead><tr><th>Name</th><th>Role and scopes</th><th>Owner</th><th>Created</th><th>Last used</th><th>Status</th>${manage ? "<th>Action</th>" : ""}</tr></thead><tbody>${rows}</tbody></table></div>`
      : `<p class="muted">No API keys yet.</p>`}
${form}`;
    return consolePage({ title: "API keys", session, active: "keys", flash, body });
  };

  scope.get("/keys", async (request, reply) => html(reply, await listPage(request, request.consoleFlash)));

  scope.post("/keys", async (request, reply) => {
    const session = sessionOf(request);
    requireManager(session);
    const name = str(request.body, "name").trim();
    const role = roleOf(str(request.body, "role"));
    const owner = str(request.body, "owner").trim();
    const values: KeyFormValues = { name: name.slice(0, NAME_MAX), role: role ?? "VIEWER", owner };
    const refuse = async (message: string, status = 400) => html(reply, await listPage(request, { kind: "error", message }, values), status);
    if (!name) return refuse("Give the key a name.");
    if (name.length > NAME_MAX) return refuse(`The name is longer than ${NAME_MAX} characters.`);
    if (!role || role === "OWNER") return refuse("Choose one of the roles.");
    if (owner && !MEMBER_ID.test(owner)) return refuse("Choose an owner from the list.");
    // Nobody grants above their own role (a 403 page, as the form never offers it).
    requireMayGrant(consolePrincipal(session), role);
    let created;
    try {
      created = await directory().createApiKey({ workspaceId: session.workspaceId, name, role, ownerMemberId: owner }, rpcOptions(request));
    } catch (err) {
      const { message, status } = formMessage(err);
      return refuse(message, status);
    }
    const key = created.apiKey!;
    const secret = created.plainKey;
    const body = `<h1>API key created</h1>
<p>The key <strong>${escapeHtml(key.name)}</strong> (${keyRole(key)}) is ready.</p>
<div class="card" role="status"><label for="key-secret">The key (shown only now: store it somewhere safe)</label>
<code class="value" id="key-secret">${escapeHtml(secret)}</code>
<div class="actions"><button type="button" class="secondary small" data-copy="${escapeHtml(secret)}" hidden>Copy</button></div>
<p class="muted">Send it as <code>Authorization: Bearer &lt;key&gt;</code>. Mailroom keeps only a hash: if it is lost, revoke it and create another.</p></div>
<p><a href="${consoleUrl("/keys")}">Back to API keys</a></p>`;
    return html(reply, consolePage({ title: "API key created", session, active: "keys", body }));
  });

  scope.post<{ Params: { keyId: string } }>("/keys/:keyId/revoke", async (request, reply) => {
    const session = sessionOf(request);
    requireManager(session);
    const { keyId } = request.params;
    const notFound = () => refusal({ code: "api_key_not_found", status: 404, message: "This workspace has no active key with this id." });
    if (!KEY_ID.test(keyId)) throw notFound();
    let key: ApiKey | undefined;
    try {
      key = (await directory().getApiKey({ workspaceId: session.workspaceId, keyId }, rpcOptions(request))).apiKey;
    } catch (err) {
      if (bodyFromError(err).statusCode === 404) throw notFound();
      throw err;
    }
    if (!key || key.workspaceId !== session.workspaceId) throw notFound();
    if (!atLeast(session.role, keyRole(key))) {
      throw refusal({ code: "insufficient_role", status: 403, message: `Revoking an ${keyRole(key)} key needs the ${keyRole(key)} role or higher; your role is ${session.role}.` });
    }
    await directory().revokeApiKey({ workspaceId: session.workspaceId, keyId }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `The key ${key.name || key.prefix} is revoked: it no longer works.` });
    // A session signed in with this very key ends with it.
    if (session.kind === "key" && session.keyId === keyId) {
      deps.sessions.end(reply);
      return seeOther(reply, consoleUrl("/sign-in"));
    }
    return seeOther(reply, consoleUrl("/keys"));
  });
}
