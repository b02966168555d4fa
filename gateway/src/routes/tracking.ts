import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { FastifyReply, FastifyRequest } from "fastify";
import { MailEventSchema, MailEventType, DeliverySource } from "../../../gen/mailroom/events/v1/events_pb.js";
import { parseRecipientToken, verifyClick, type RecipientRef } from "../../../services/renderer/src/tokens.js";
import type { GatewayDeps } from "../deps.js";
import type { RouteModule } from "./index.js";
import { publicErrorBody, sendError } from "../errors.js";

/** 1×1 transparent GIF. */
const PIXEL = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");

export const sourceOf = (contentId: string) =>
  contentId.startsWith("cmp_") ? DeliverySource.BROADCAST : DeliverySource.TRANSACTIONAL;

/** Publishes a tracking event without making the recipient wait for it or see its failure. */
export function recordEvent(deps: GatewayDeps, request: FastifyRequest, type: MailEventType, r: RecipientRef, url = ""): void {
  if (!deps.tracking) return;
  const event = create(MailEventSchema, {
    // One event per (message, kind, link) a second: reloads are deduplicated by msgID.
    eventId: `${MailEventType[type].toLowerCase()}:${r.messageId}:${r.email}:${url}:${Math.floor(Date.now() / 1000)}`,
    type,
    workspaceId: r.workspaceId,
    source: sourceOf(r.contentId),
    emailId: r.contentId.startsWith("trs_") ? r.contentId : "",
    broadcastId: r.contentId.startsWith("cmp_") ? r.contentId : "",
    messageId: r.messageId,
    recipient: r.email,
    contactId: r.contactId,
    url,
    occurredAt: timestampNow(),
  });
  deps.tracking.publish(event).catch((err) => request.log.warn({ err }, "tracking event not recorded"));
}

const notFound = (reply: FastifyReply) => sendError(reply, publicErrorBody({ code: "not_found", message: "Unknown or invalid link" }));

/**
 * Open pixel and click redirects. Tokens are HMAC-signed by the renderer, so a tampered
 * token is a 404 and never a redirect to a URL we did not sign.
 */
export const registerTracking: RouteModule = (app, deps) => {
  app.get<{ Params: { token: string } }>("/t/o/:token", async (request, reply) => {
    const r = parseRecipientToken(deps.config.secret, request.params.token);
    if (!r) return notFound(reply);
    recordEvent(deps, request, MailEventType.OPENED, r);
    return reply
      .header("cache-control", "no-store, no-cache, must-revalidate, private")
      .type("image/gif")
      .send(PIXEL);
  });

  app.get<{ Params: { link: string; token: string } }>("/t/c/:link/:token", async (request, reply) => {
    const click = verifyClick(deps.config.secret, request.params.link, request.params.token);
    if (!click) return notFound(reply);
    let target: string;
    try {
      target = new URL(click.link.url).href;
    } catch {
      return notFound(reply);
    }
    recordEvent(deps, request, MailEventType.CLICKED, click.recipient, target);
    return reply.header("cache-control", "no-store").redirect(target, 302);
  });
};
