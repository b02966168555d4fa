/**
 * Groups pages (DESIGN §9.4): the workspace's groups with their member counts, one group's
 * contacts, adding a contact by email and removing one.
 *
 *   GET  /groups[?cursor=]                        list + create form
 *   POST /groups                                  create (publicId, displayName)
 *   GET  /groups/:id[?cursor=]                    the group: rename, delete, add a contact, members
 *   POST /groups/:id                              rename (display name)
 *   POST /groups/:id/delete                       delete (the contacts stay; they leave the group)
 *   POST /groups/:id/contacts                     add a contact by email
 *   POST /groups/:id/contacts/:contactId/remove   remove a contact
 *
 * Every call names the session's workspace: another workspace's group is not found.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ContactStatus, type Contact } from "@mailroom/proto/directory/v1/directory_pb.js";
import type { Group } from "@mailroom/proto/directory/v1/groups_pb.js";
import { refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, type Flash } from "./layout.js";
import { seeOther, sessionOf, setFlash } from "./session.js";
import { ID, editable, formError, html, notFoundUnless, str } from "./form-values.js";

const PAGE = 25;

export const groupLabel = (g: Pick<Group, "displayName" | "publicId">) => g.displayName || g.publicId;

/** How many contacts are in the group now (an indexed count); undefined when it cannot be had. */
export async function memberCount(deps: ConsoleDeps, request: FastifyRequest, groupId: string): Promise<number | undefined> {
  try {
    const res = await deps.clients.directory.listContacts(
      { workspaceId: sessionOf(request).workspaceId, filter: JSON.stringify({ groups: groupId }), includeCount: true, page: { limit: 1 } },
      rpcOptions(request),
    );
    return res.totalCount === undefined ? undefined : Number(res.totalCount);
  } catch {
    return undefined;
  }
}

const statusText = (s: ContactStatus) => (ContactStatus[s] ?? "UNKNOWN").replace(/_/g, " ").toLowerCase();

export function registerGroupPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const rpc = () => deps.clients.groups;

  const load = async (request: FastifyRequest, id: string): Promise<Group> => {
    notFoundUnless(ID.group.test(id), "group_not_found", "group");
    const { group } = await rpc().getGroup({ workspaceId: sessionOf(request).workspaceId, groupId: id }, rpcOptions(request));
    if (!group) throw refusal({ code: "group_not_found", status: 404, message: "No group with this id exists in the workspace." });
    return group;
  };

  const listPage = async (request: FastifyRequest, flash?: Flash, values = { publicId: "", displayName: "" }) => {
    const session = sessionOf(request);
    const cursor = str(request.query, "cursor");
    const res = await rpc().listGroups({ workspaceId: session.workspaceId, page: { limit: 50, cursor } }, rpcOptions(request));
    const counts = await Promise.all(res.groups.map((g) => memberCount(deps, request, g.id)));
    const rows = res.groups.map((g, i) => `<tr><td data-label="Group"><a href="${consoleUrl(`/groups/${g.id}`)}">${escapeHtml(groupLabel(g))}</a></td>
<td data-label="Public id"><code>${escapeHtml(g.publicId)}</code></td>
<td data-label="Contacts" class="num" data-members>${counts[i] ?? "—"}</td>
<td data-label="Created">${formatTime(g.createdAt && timestampDate(g.createdAt))}</td></tr>`).join("");
    const more = res.page?.hasMore ? `<p><a href="${consoleUrl("/groups", { cursor: res.page.nextCursor })}">More groups</a></p>` : "";
    const body = `<h1>Groups</h1>
<p class="muted">Groups are lists you put contacts in (by hand, through the API, or with a signup form). Send a broadcast to one or more groups, or use them in segment filters.</p>
${rows ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">Groups</caption><thead><tr><th>Group</th><th>Public id</th><th class="num">Contacts</th><th>Created</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : `<p class="muted">No groups yet.</p>`}
${session.canEdit ? `<h2 id="new">New group</h2>
<form method="post" action="${consoleUrl("/groups")}" class="card">${csrfField(session)}
<div class="grid"><div class="field"><label for="publicId">Public id</label><p class="muted" id="publicId-h" style="margin:0 0 .25rem">Unique in the workspace; what the API and filters may call it (e.g. <code>newsletter</code>).</p>
<input id="publicId" name="publicId" required maxlength="200" value="${escapeHtml(values.publicId)}" aria-describedby="publicId-h" style="width:100%"></div>
<div class="field"><label for="displayName">Display name (optional)</label><input id="displayName" name="displayName" maxlength="200" value="${escapeHtml(values.displayName)}" style="width:100%"></div></div>
<div class="actions"><button type="submit">Create group</button></div></form>` : ""}`;
    return consolePage({ title: "Groups", session, active: "groups", flash, body });
  };

  scope.get("/groups", async (request, reply) => html(reply, await listPage(request, request.consoleFlash)));

  scope.post("/groups", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const values = { publicId: str(request.body, "publicId").trim(), displayName: str(request.body, "displayName").trim() };
    try {
      const { group } = await rpc().createGroup({ workspaceId: session.workspaceId, ...values }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Group ${groupLabel(group!)} created.` });
      return seeOther(reply, consoleUrl(`/groups/${group!.id}`));
    } catch (err) {
      const flash = formError(err);
      return html(reply, await listPage(request, flash, values), flash.status);
    }
  });

  scope.get<{ Params: { id: string } }>("/groups/:id", async (request, reply) => {
    const session = sessionOf(request);
    const g = await load(request, request.params.id);
    const opts = rpcOptions(request);
    const cursor = str(request.query, "cursor");
    const [res, count] = await Promise.all([
      rpc().listGroupContacts({ workspaceId: session.workspaceId, groupId: g.id, page: { limit: PAGE, cursor } }, opts),
      memberCount(deps, request, g.id),
    ]);
    // The page's contacts (their address and status), read together.
    const contacts = await Promise.all(res.members.map((m) =>
      deps.clients.directory.getContact({ workspaceId: session.workspaceId, contactId: m.contactId }, opts).then((r) => r.contact, () => undefined as Contact | undefined)));
    const csrf = csrfField(session);
    const base = consoleUrl(`/groups/${g.id}`);
    const rows = res.members.map((m, i) => {
      const c = contacts[i];
      const name = c ? [c.firstName, c.lastName].filter(Boolean).join(" ") : "";
      return `<tr><td data-label="Contact">${c ? `<a href="${consoleUrl(`/contacts/${c.id}`)}">${escapeHtml(c.email)}</a>` : `<code>${escapeHtml(m.contactId)}</code>`}${name ? `<br><span class="muted">${escapeHtml(name)}</span>` : ""}</td>
<td data-label="Status">${c ? statusBadge(statusText(c.status), c.status === ContactStatus.SUBSCRIBED ? "ok" : "warn") : "—"}</td>
<td data-label="Added">${formatTime(m.addedAt && timestampDate(m.addedAt))}</td>
<td data-label="Action">${session.canEdit ? `<form method="post" action="${base}/contacts/${m.contactId}/remove">${csrf}<button type="submit" class="secondary small" aria-label="Remove ${escapeHtml(c?.email ?? m.contactId)} from the group">Remove</button></form>` : ""}</td></tr>`;
    }).join("");
    const more = res.page?.hasMore ? `<p><a href="${consoleUrl(`/groups/${g.id}`, { cursor: res.page.nextCursor })}">More contacts</a></p>` : "";
    const body = `<h1>${escapeHtml(groupLabel(g))}</h1>
<p class="muted">Public id <code>${escapeHtml(g.publicId)}</code> · id <code>${escapeHtml(g.id)}</code> · created ${formatTime(g.createdAt && timestampDate(g.createdAt))}</p>
<p><strong id="member-count">${count ?? "—"}</strong> ${count === 1 ? "contact" : "contacts"} in this group.</p>
${session.canEdit ? `<div class="grid">
<form method="post" action="${base}/contacts" class="card">${csrf}<div class="field"><label for="add-email">Add a contact (email)</label>
<input id="add-email" name="email" type="email" required style="width:100%" placeholder="someone@example.com"></div>
<div class="actions" style="margin:.25rem 0 0"><button type="submit">Add to group</button></div></form>
<form method="post" action="${base}" class="card">${csrf}<div class="field"><label for="rename">Display name</label>
<input id="rename" name="displayName" maxlength="200" value="${escapeHtml(g.displayName)}" style="width:100%"></div>
<div class="actions" style="margin:.25rem 0 0"><button type="submit" class="secondary">Rename</button></div></form></div>` : ""}
<h2 id="members-h">Contacts</h2>
${rows ? `<div class="table-wrap"><table class="data stack" aria-labelledby="members-h"><thead><tr><th>Contact</th><th>Status</th><th>Added</th><th>Action</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : `<p class="muted">No contacts in this group yet.</p>`}
${session.canEdit ? `<h2>Delete</h2><form method="post" action="${base}/delete" data-confirm="Delete the group ${escapeHtml(groupLabel(g))}? Its contacts stay, outside the group.">${csrf}
<p class="muted">The contacts are not deleted; they just leave the group. Broadcasts and segments naming it will not find it.</p><button type="submit" class="danger">Delete group</button></form>` : ""}
<p><a href="${consoleUrl("/groups")}">Back to groups</a></p>`;
    return html(reply, consolePage({ title: groupLabel(g), session, active: "groups", flash: request.consoleFlash, body }));
  });

  /** Runs a change on the group and comes back to its page with what happened. */
  const action = (path: string, run: (request: FastifyRequest<{ Params: { id: string; contactId?: string } }>, g: Group) => Promise<string>) =>
    scope.post<{ Params: { id: string; contactId?: string } }>(path, async (request, reply) => {
      editable(request);
      const g = await load(request, request.params.id);
      try {
        setFlash(reply, { kind: "ok", message: await run(request, g) });
      } catch (err) {
        setFlash(reply, formError(err));
      }
      return seeOther(reply, consoleUrl(`/groups/${g.id}`));
    });

  action("/groups/:id", async (request, g) => {
    const displayName = str(request.body, "displayName").trim();
    await rpc().updateGroup({ workspaceId: sessionOf(request).workspaceId, groupId: g.id, displayName }, rpcOptions(request));
    return displayName ? `Renamed to ${displayName}.` : "Display name removed.";
  });

  action("/groups/:id/contacts", async (request, g) => {
    const session = sessionOf(request);
    const email = str(request.body, "email").trim();
    if (!email) throw refusal({ code: "invalid_request", status: 400, message: "Give the contact's email address." });
    const found = await deps.clients.directory.getContact({ workspaceId: session.workspaceId, email }, rpcOptions(request)).catch((err: unknown) => {
      if (formError(err).status === 404) throw refusal({ code: "contact_not_found", status: 404, message: `No contact with the address ${email} in this workspace. Add it under Contacts first.` });
      throw err;
    });
    const res = await rpc().addGroupContact({ workspaceId: session.workspaceId, groupId: g.id, contactId: found.contact!.id }, rpcOptions(request));
    return res.added ? `${found.contact!.email} added to the group.` : `${found.contact!.email} was in the group already.`;
  });

  action("/groups/:id/contacts/:contactId/remove", async (request, g) => {
    const contactId = request.params.contactId ?? "";
    notFoundUnless(ID.contact.test(contactId), "contact_not_found", "contact");
    const res = await rpc().removeGroupContact({ workspaceId: sessionOf(request).workspaceId, groupId: g.id, contactId }, rpcOptions(request));
    return res.removed ? "Contact removed from the group." : "That contact was not in the group.";
  });

  scope.post<{ Params: { id: string } }>("/groups/:id/delete", async (request, reply) => {
    editable(request);
    const g = await load(request, request.params.id);
    const res = await rpc().deleteGroup({ workspaceId: sessionOf(request).workspaceId, groupId: g.id }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `Group ${groupLabel(g)} deleted (${Number(res.contactsRemoved)} contacts left it).` });
    return seeOther(reply, consoleUrl("/groups"));
  });
}
