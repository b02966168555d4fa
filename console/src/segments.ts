/**
 * The workspace's groups and segments for pickers (broadcasts, automations, forms). The
 * segments pages are pages/segments.ts (handlers) and views/segments.ts (markup).
 */
import type { FastifyRequest } from "fastify";
import type { Segment } from "@mailroom/proto/audience/v1/audiences_pb.js";
import type { Group } from "@mailroom/proto/audience/v1/groups_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { sessionOf } from "./session.js";

/** The workspace's groups (the first pages: enough for a picker). */
export async function workspaceGroups(deps: ConsoleDeps, request: FastifyRequest): Promise<Group[]> {
  const out: Group[] = [];
  let cursor = "";
  for (let i = 0; i < 5; i++) {
    const res = await deps.clients.groups.listGroups({ workspaceId: sessionOf(request).workspaceId, page: { limit: 100, cursor } }, rpcOptions(request));
    out.push(...res.groups);
    if (!res.page?.hasMore) break;
    cursor = res.page.nextCursor;
  }
  return out;
}

/** The workspace's segments (the first pages). */
export async function workspaceSegments(deps: ConsoleDeps, request: FastifyRequest): Promise<Segment[]> {
  const out: Segment[] = [];
  let cursor = "";
  for (let i = 0; i < 5; i++) {
    const res = await deps.clients.audiences.listSegments({ workspaceId: sessionOf(request).workspaceId, page: { limit: 100, cursor } }, rpcOptions(request));
    out.push(...res.segments);
    if (!res.page?.hasMore) break;
    cursor = res.page.nextCursor;
  }
  return out;
}
