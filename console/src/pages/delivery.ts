/**
 * Delivery: how mail leaves (DESIGN §9.7), as the delivery process answering GetStatus sees
 * it: the mode (relay, direct, capture), the EHLO name and source address of direct delivery,
 * and each route with its kind, target, weight, lanes, workspaces, provider, health (up, or
 * down until when and why) and counters. Also `directSendingStatus`, what the domain page
 * needs to know to check a domain's DNS for direct sending.
 *
 * All of it is process-wide (one delivery process carries every workspace's mail), so it is the
 * operator's, not a tenant's: the page is for owners and admins (and console sessions of keys
 * as high), by its rule in roles.ts; the nav hides it from the others. Its counters are labelled
 * as the delivery process's, across all workspaces (there are no per-workspace counters here).
 * Even there a route reserved for other workspaces shows how many, never their ids.
 * The markup is views/delivery.ts.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { GetStatusResponse } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { consolePage } from "../layout.js";
import { sessionOf } from "../session.js";
import { render } from "../views/html.js";
import { deliveryView } from "../views/delivery.js";

/** The delivery status, or the reason it could not be read (the pages show it instead of failing). */
export async function deliveryStatus(deps: ConsoleDeps, request: FastifyRequest): Promise<{ status?: GetStatusResponse; error?: string }> {
  try {
    return { status: await deps.clients.delivery.getStatus({}, { ...rpcOptions(request), timeoutMs: 5_000 }) };
  } catch (err) {
    return { error: bodyFromError(err).message };
  }
}

export function registerDeliveryPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/delivery", async (request, reply) => {
    const session = sessionOf(request);
    const { status, error } = await deliveryStatus(deps, request);
    const body = deliveryView(status, error, session.workspaceId);
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Delivery", session, active: "delivery", flash: request.consoleFlash, body: render(body) }));
  });
}
