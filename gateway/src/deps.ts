import type { Client } from "@connectrpc/connect";
import type { CallOptions } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { DirectoryService } from "../../gen/mailroom/directory/v1/directory_pb.js";
import { EmailService } from "../../gen/mailroom/email/v1/email_pb.js";
import { BroadcastService } from "../../gen/mailroom/broadcast/v1/broadcast_pb.js";
import { RendererService } from "../../gen/mailroom/renderer/v1/renderer_pb.js";
import { DeliveryService } from "../../gen/mailroom/delivery/v1/delivery_pb.js";
import { connectClient, type Config, type Logger } from "../../services/kit/src/index.js";

export interface ServiceClients {
  directory: Client<typeof DirectoryService>;
  email: Client<typeof EmailService>;
  broadcast: Client<typeof BroadcastService>;
  renderer: Client<typeof RendererService>;
  delivery: Client<typeof DeliveryService>;
}

/** Publishes tracking events (opened, clicked, unsubscribed); absent in unit tests. */
export interface TrackingEvents {
  publish(event: import("../../gen/mailroom/events/v1/events_pb.js").MailEvent): Promise<void>;
}

export interface GatewayDeps {
  config: Config;
  logger: Logger;
  clients: ServiceClients;
  tracking?: TrackingEvents;
  /** Requests per minute per API key (0 disables). */
  rateLimitPerMinute: number;
  /** How long a successful key lookup is trusted before asking the directory again. */
  authCacheMs: number;
}

export function createServiceClients(config: Config): ServiceClients {
  return {
    directory: connectClient(DirectoryService, config.urls.directory),
    email: connectClient(EmailService, config.urls.email),
    broadcast: connectClient(BroadcastService, config.urls.broadcast),
    renderer: connectClient(RendererService, config.urls.renderer),
    delivery: connectClient(DeliveryService, config.urls.delivery),
  };
}

/** Call options that carry the request id to the next hop. */
export function rpcOptions(request: FastifyRequest): CallOptions {
  return { headers: { "x-request-id": String(request.id) }, timeoutMs: 30_000 };
}
