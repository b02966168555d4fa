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
 * Every call names the session's workspace: another workspace's group is not found. The create
 * and rename forms are checked with the /v1 routes' schemas; the markup is views/groups.ts.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Contact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { Group } from "@mailroom/proto/audience/v1/groups_pb.js";
import { refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { createGroupSchema, updateGroupSchema } from "@mailroom/http/groups-schema.js";
import { ID, editable, formError, html, notFoundUnless, parseWith, str } from "../form-values.js";
import { groupLabel, memberCount } from "../groups.js";
import { render } from "../views/html.js";
import { groupListView, groupView, type NewGroupValues } from "../views/groups.js";

const PAGE = 25;

export function registerGroupPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const rpc = () => deps.clients.groups;

  const load = async (request: FastifyRequest, id: string): Promise<Group> => {
    notFoundUnless(ID.group.test(id), "group_not_found", "group");
    const { group } = await rpc().getGroup({ workspaceId: sessionOf(request).workspaceId, groupId: id }, rpcOptions(request));
    if (!group) throw refusal({ code: "group_not_found", status: 404, message: "No group with this id exists in the workspace." });
    return group;
  };

  const listPage = async (request: FastifyRequest, flash?: Flash, values: NewGroupValues = { publicId: "", displayName: "" }) => {
    const session = sessionOf(request);
    const cursor = str(request.query, "cursor");
    const res = await rpc().listGroups({ workspaceId: session.workspaceId, page: { limit: 50, cursor } }, rpcOptions(request));
    const counts = await Promise.all(res.groups.map((g) => memberCount(deps, request, g.id)));
    const body = groupListView({
      groups: res.groups, counts, nextCursor: res.page?.hasMore ? res.page.nextCursor : undefined, canEdit: session.canEdit, csrf: csrfField(session), values,
    });
    return consolePage({ title: "Groups", session, active: "groups", flash, body: render(body) });
  };

  scope.get("/groups", async (request, reply) => html(reply, await listPage(request, request.consoleFlash)));

  scope.post("/groups", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const values = { publicId: str(request.body, "publicId").trim(), displayName: str(request.body, "displayName").trim() };
    const parsed = parseWith(createGroupSchema, { publicId: values.publicId, ...(values.displayName ? { displayName: values.displayName } : {}) });
    if (!parsed.ok) return html(reply, await listPage(request, parsed.flash, values), parsed.flash.status);
    try {
      const { group } = await rpc().createGroup(
        { workspaceId: session.workspaceId, publicId: parsed.data.publicId, displayName: parsed.data.displayName ?? "", traits: parsed.data.traits as never }, rpcOptions(request));
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
      deps.clients.contacts.getContact({ workspaceId: session.workspaceId, contactId: m.contactId }, opts).then((r) => r.contact, () => undefined as Contact | undefined)));
    const body = groupView({
      group: g, count, members: res.members.map((member, i) => ({ member, contact: contacts[i] })),
      nextCursor: res.page?.hasMore ? res.page.nextCursor : undefined, canEdit: session.canEdit, csrf: csrfField(session),
    });
    return html(reply, consolePage({ title: groupLabel(g), session, active: "groups", flash: request.consoleFlash, body: render(body) }));
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
    const parsed = parseWith(updateGroupSchema, { displayName: str(request.body, "displayName").trim() });
    if (!parsed.ok) throw refusal({ code: "invalid_group", status: 400, message: parsed.flash.message });
    const displayName = parsed.data.displayName ?? "";
    await rpc().updateGroup({ workspaceId: sessionOf(request).workspaceId, groupId: g.id, displayName }, rpcOptions(request));
    return displayName ? `Renamed to ${displayName}.` : "Display name removed.";
  });

  action("/groups/:id/contacts", async (request, g) => {
    const session = sessionOf(request);
    const email = str(request.body, "email").trim();
    if (!email) throw refusal({ code: "invalid_request", status: 400, message: "Give the contact's email address." });
    const found = await deps.clients.contacts.getContact({ workspaceId: session.workspaceId, email }, rpcOptions(request)).catch((err: unknown) => {
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
