/**
 * What other pages use of groups: a group's label and its member count. The groups pages are
 * pages/groups.ts (handlers) and views/groups.ts (markup).
 */
import type { FastifyRequest } from "fastify";
import type { Group } from "@mailroom/proto/audience/v1/groups_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { sessionOf } from "./session.js";

export const groupLabel = (g: Pick<Group, "displayName" | "publicId">) => g.displayName || g.publicId;

/** How many contacts are in the group now (an indexed count); undefined when it cannot be had. */
export async function memberCount(deps: ConsoleDeps, request: FastifyRequest, groupId: string): Promise<number | undefined> {
  try {
    const res = await deps.clients.contacts.listContacts(
      { workspaceId: sessionOf(request).workspaceId, filter: JSON.stringify({ groups: groupId }), includeCount: true, page: { limit: 1 } },
      rpcOptions(request),
    );
    return res.totalCount === undefined ? undefined : Number(res.totalCount);
  } catch {
    return undefined;
  }
}
