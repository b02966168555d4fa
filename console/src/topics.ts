/**
 * The workspace's topics for pickers (broadcasts, forms). The topics pages are
 * pages/topics.ts (handlers) and views/topics.ts (markup).
 */
import type { FastifyRequest } from "fastify";
import type { Topic } from "@mailroom/proto/audience/v1/topics_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { sessionOf } from "./session.js";

/** The workspace's topics (the first pages). */
export async function workspaceTopics(deps: ConsoleDeps, request: FastifyRequest): Promise<Topic[]> {
  const out: Topic[] = [];
  let cursor = "";
  for (let i = 0; i < 5; i++) {
    const res = await deps.clients.topics.listTopics({ workspaceId: sessionOf(request).workspaceId, limit: 100, cursor }, rpcOptions(request));
    out.push(...res.topics);
    if (!res.hasMore) break;
    cursor = res.nextCursor;
  }
  return out;
}
