import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { GroupService, type GroupSchema } from "@mailroom/proto/audience/v1/groups_pb.js";
import type { Groups } from "./domain/groups.js";
import type { Group } from "@mailroom/records/group-ports.js";

/** Proto ⇄ domain mapping of GroupService; every rule lives in domain/groups.ts. */

const ts = (d: Date | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);

export function groupToPb(g: Group): MessageInitShape<typeof GroupSchema> {
  return {
    id: g._id,
    workspaceId: g.workspaceId,
    publicId: g.publicId,
    displayName: g.displayName ?? "",
    traits: g.traits as JsonObject | undefined,
    createdAt: ts(g.createdAt),
    updatedAt: ts(g.updatedAt),
  };
}

export function groupService(groups: Groups): ServiceImpl<typeof GroupService> {
  return {
    async createGroup(req) {
      const group = await groups.create(req.workspaceId, { publicId: req.publicId, displayName: req.displayName || undefined, traits: req.traits });
      return { group: groupToPb(group) };
    },
    async getGroup(req) {
      return { group: groupToPb(await groups.get(req.workspaceId, req.groupId)) };
    },
    async listGroups(req) {
      const page = await groups.list(req.workspaceId, { limit: req.page?.limit, cursor: req.page?.cursor });
      return { groups: page.items.map(groupToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },
    async updateGroup(req) {
      const group = await groups.update(req.workspaceId, req.groupId, {
        displayName: req.displayName,
        traits: req.clearTraits ? null : req.traits,
      });
      return { group: groupToPb(group) };
    },
    async deleteGroup(req) {
      const { group, contactsRemoved } = await groups.delete(req.workspaceId, req.groupId);
      return { group: groupToPb(group), contactsRemoved: BigInt(contactsRemoved) };
    },
    async addGroupContact(req) {
      const m = await groups.addContact(req.workspaceId, req.groupId, req.contactId);
      return { groupId: m.groupId, contactId: m.contactId, addedAt: ts(m.addedAt), added: m.added };
    },
    async removeGroupContact(req) {
      const r = await groups.removeContact(req.workspaceId, req.groupId, req.contactId);
      return { groupId: r.groupId, contactId: r.contactId, removed: r.removed };
    },
    async listContactGroups(req) {
      const items = await groups.ofContact(req.workspaceId, req.contactId);
      return { groups: items.map((i) => ({ group: groupToPb(i.group), addedAt: ts(i.addedAt) })) };
    },
    async listGroupContacts(req) {
      const page = await groups.listContacts(req.workspaceId, req.groupId, { limit: req.page?.limit, cursor: req.page?.cursor });
      return { members: page.items.map((m) => ({ contactId: m.contactId, addedAt: ts(m.addedAt) })), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },
  };
}

export function groupRoutes(groups: Groups) {
  return (router: ConnectRouter) => {
    router.service(GroupService, groupService(groups));
  };
}
