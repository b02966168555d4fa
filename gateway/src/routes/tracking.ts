import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { FastifyReply, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";
import { MailEventSchema, MailEventType, DeliverySource } from "@mailroom/proto/events/v1/events_pb.js";
import { parseClickToken, parseRecipientToken, tokenSecretsOf, type LinkRef, type RecipientRef } from "@mailroom/content/tokens.js";
import { LINK_ROUTES } from "@mailroom/content/urls.js";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import type { RouteModule } from "./route.js";
import { publicErrorBody, sendError } from "@mailroom/http/errors.js";

/** 1×1 transparent GIF. */
const PIXEL = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");
const PIXEL_HEADERS = {
  "content-type": "image/gif",
  "content-length": String(PIXEL.length),
  "cache-control": "no-store, no-cache, must-revalidate, private",
};

export const sourceOf = (contentId: string) =>
  contentId.startsWith("cmp_") ? DeliverySource.BROADCAST : DeliverySource.TRANSACTIONAL;

const KIND = { [MailEventType.OPENED]: "opened", [MailEventType.CLICKED]: "clicked" } as Record<number, string>;

/** Publishes a tracking event without making the recipient wait for it or see its failure. */
export function recordEvent(deps: GatewayDeps, request: FastifyRequest, type: MailEventType, r: RecipientRef, url = ""): void {
  if (!deps.tracking) return;
  const event = create(MailEventSchema, {
    // One event per (message, kind, link) a second: reloads are deduplicated by msgID.
    // (Tokens issued since format 3 carry no Message-ID: the content id names the message.)
    eventId: `${KIND[type] ?? MailEventType[type].toLowerCase()}:${r.messageId || r.contentId}:${r.email}:${url}:${Math.floor(Date.now() / 1000)}`,
    type,
    workspaceId: r.workspaceId,
    // A test send's events are previews: counted by no broadcast, sent to no webhook.
    source: r.testSend ? DeliverySource.BROADCAST_TEST : sourceOf(r.contentId),
    emailId: r.contentId.startsWith("trs_") ? r.contentId : "",
    broadcastId: r.contentId.startsWith("cmp_") ? r.contentId : "",
    messageId: r.messageId,
    recipient: r.email,
    contactId: r.contactId,
    url,
    occurredAt: timestampNow(),
  });
  deps.tracking.publish(event).catch((err) => request.log.warn({ err, requestId: request.id }, "tracking event not recorded"));
}

const notFound = (reply: FastifyReply) => sendError(reply, publicErrorBody({ code: "not_found", message: "Unknown or invalid link" }));

/** A verified link token and its Location, kept: one link token is shared by every recipient of a message. */
interface VerifiedLink {
  link: LinkRef;
  location: string;
}

/**
 * Open pixel and click redirects. Tokens are authenticated (services/content/src/tokens.ts),
 * so a tampered token is a 404 and never a redirect to a URL we did not sign.
 *
 * The hot path: no accounts or audience unit, auth, rate limit, store or RPC; the event is handed to the
 * NATS client without waiting for anything. These routes use the request-less parent
 * logger (no per-request child logger) and answer on the raw response (no serialization or
 * onSend work); verified link tokens are cached.
 */
export const registerTracking: RouteModule = (app, deps) => {
  // The current secret and, during a rotation, the previous one.
  const secret = tokenSecretsOf(deps.config);
  const links = new LRUCache<string, VerifiedLink | false>({ max: 20_000 });
  const verifiedLink = (token: string): VerifiedLink | false => {
    let cached = links.get(token);
    if (cached !== undefined) return cached;
    const link = parseClickToken(secret, token);
    cached = false;
    if (link) {
      try {
        cached = { link, location: new URL(link.url).href };
      } catch {
        cached = false;
      }
    }
    links.set(token, cached);
    return cached;
  };

  // This scope only: a child logger per request costs more than the rest of a click.
  app.setChildLoggerFactory((logger) => logger);

  app.get<{ Params: { token: string } }>(LINK_ROUTES.open, async (request, reply) => {
    const r = parseRecipientToken(secret, request.params.token);
    if (!r) return notFound(reply);
    recordEvent(deps, request, MailEventType.OPENED, r);
    reply.hijack();
    reply.raw.writeHead(200, { ...PIXEL_HEADERS, "x-request-id": String(request.id) });
    reply.raw.end(PIXEL);
  });

  app.get<{ Params: { link: string; token: string } }>(LINK_ROUTES.click, async (request, reply) => {
    const verified = verifiedLink(request.params.link);
    if (!verified) return notFound(reply);
    const recipient = parseRecipientToken(secret, request.params.token);
    if (!recipient || recipient.contentId !== verified.link.contentId) return notFound(reply);
    recordEvent(deps, request, MailEventType.CLICKED, recipient, verified.location);
    reply.hijack();
    reply.raw.writeHead(302, { location: verified.location, "cache-control": "no-store", "content-length": "0", "x-request-id": String(request.id) });
    reply.raw.end();
  });
};
