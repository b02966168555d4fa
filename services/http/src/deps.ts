import type { Client } from "@connectrpc/connect";
import type { CallOptions } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { BroadcastService } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { PreSendCheckService } from "@mailroom/proto/broadcast/v1/check_pb.js";
import { RendererService } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { DeliveryService } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { WebhookService } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { FormService } from "@mailroom/proto/audience/v1/forms_pb.js";
import { AudienceService } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { TopicService } from "@mailroom/proto/audience/v1/topics_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { AutomationService } from "@mailroom/proto/automation/v1/automation_pb.js";
import { InboundService, ReceivingService } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { connectClient, type Config, type Logger } from "@mailroom/kit";
import { ACTOR_HEADER, ACTOR_LABEL_HEADER, actorHeaderValue, actorLabelHeaderValue } from "@mailroom/kit/audit.js";
import type { TokenBuckets } from "@mailroom/kit/token-bucket.js";
import type { OidcSettings, SystemSender } from "./settings.js";

/**
 * Call options that name the request being served (see rpcOptions) and, for a signed-in
 * caller, who acts: the audit log records the changes the call makes under that actor.
 */
export type RequestCallOptions = CallOptions & { headers: { "x-request-id": string; [ACTOR_HEADER]?: string; [ACTOR_LABEL_HEADER]?: string } };

/**
 * A service client whose every call must name the request it serves: the request id is
 * passed, not found through AsyncLocalStorage (its promise hooks cost Node 20 a share of
 * the gateway's CPU on every request), and the compiler sees to it that no call forgets.
 */
export type RequestScoped<C> = {
  [K in keyof C]: C[K] extends (request: infer Q, options?: CallOptions) => infer R ? (request: Q, options: RequestCallOptions) => R : C[K];
};

export interface ServiceClients {
  /** Workspaces, keys, senders, members and usage (the accounts unit). */
  accounts: RequestScoped<Client<typeof AccountsService>>;
  /** Contacts, properties, contact events and suppressions (the audience unit). */
  contacts: RequestScoped<Client<typeof ContactService>>;
  email: RequestScoped<Client<typeof EmailService>>;
  broadcast: RequestScoped<Client<typeof BroadcastService>>;
  /** Pre-send checks of broadcasts and templates (served by the broadcast unit). */
  check: RequestScoped<Client<typeof PreSendCheckService>>;
  renderer: RequestScoped<Client<typeof RendererService>>;
  delivery: RequestScoped<Client<typeof DeliveryService>>;
  webhooks: RequestScoped<Client<typeof WebhookService>>;
  /** Signup forms (served by the audience unit). */
  forms: RequestScoped<Client<typeof FormService>>;
  /** Segments and broadcast audiences (served by the audience unit). */
  audiences: RequestScoped<Client<typeof AudienceService>>;
  /** Groups and their contacts (served by the audience unit). */
  groups: RequestScoped<Client<typeof GroupService>>;
  /** Templates, their previews and versions (served by the accounts unit). */
  templates: RequestScoped<Client<typeof TemplateService>>;
  /** Topics and contacts' choices (served by the audience unit). */
  topics: RequestScoped<Client<typeof TopicService>>;
  /** Members, console sign-in, sessions and the audit log (served by the accounts unit). */
  team: RequestScoped<Client<typeof TeamService>>;
  /** Automations and their runs (the automation unit). */
  automation: RequestScoped<Client<typeof AutomationService>>;
  /** Relay provider event webhooks (the inbound unit, DESIGN §9.7). */
  inbound: RequestScoped<Client<typeof InboundService>>;
  /** Receiving email: inbound domains and rules, received messages, DMARC reports (the inbound unit, DESIGN §10.4). */
  receiving: RequestScoped<Client<typeof ReceivingService>>;
}

/** Publishes tracking events (opened, clicked, unsubscribed); absent in unit tests. */
export interface TrackingEvents {
  publish(event: import("@mailroom/proto/events/v1/events_pb.js").MailEvent): Promise<void>;
}

export interface GatewayDeps {
  /** What every process shares; the gateway's own settings (services/http/src/settings.ts) are the fields below. */
  config: Config;
  logger: Logger;
  clients: ServiceClients;
  tracking?: TrackingEvents;
  /** Requests per minute per API key (0 disables). */
  rateLimitPerMinute: number;
  /** Token bucket size per key (default: a minute's worth). */
  rateLimitBurst?: number;
  /** Where the per-key buckets live (NATS KV in main.ts, shared by every gateway; default in memory). */
  rateLimitBuckets?: TokenBuckets;
  /** Failed API key attempts per client address per minute (absent or 0: unlimited). */
  authFailuresPerMinute?: number;
  /** How long a successful key lookup is trusted before asking the accounts unit again. */
  authCacheMs: number;
  /** Base URL of the error documentation pages (default `<config.publicUrl>/docs/errors`). */
  errorDocsUrl?: string;
  /** Address the gateway binds (default 127.0.0.1): /dev/mail is only mounted on loopback. */
  httpHost?: string;
  /** Delivery captures mail locally (no relay, routes or direct mode): /dev/mail is mounted. */
  capturesMail?: boolean;
  /** Console sign-in: OpenID Connect, and the sender of sign-in and invitation mail (settings.ts). */
  consoleSignIn?: { oidc?: OidcSettings; systemSender?: SystemSender };
  /** How long and how much of an unread request body is drained after its answer (default DEFAULT_DRAIN_LIMITS). */
  drainLimits?: DrainLimits;
}

/** Clients of the services; every call names its request with rpcOptions(request). */
export function createServiceClients(config: Config): ServiceClients {
  return {
    accounts: connectClient(AccountsService, config.urls.accounts),
    contacts: connectClient(ContactService, config.urls.audience),
    email: connectClient(EmailService, config.urls.email),
    broadcast: connectClient(BroadcastService, config.urls.broadcast),
    check: connectClient(PreSendCheckService, config.urls.broadcast),
    renderer: connectClient(RendererService, config.urls.renderer),
    delivery: connectClient(DeliveryService, config.urls.delivery),
    webhooks: connectClient(WebhookService, config.urls.webhooks),
    forms: connectClient(FormService, config.urls.audience),
    audiences: connectClient(AudienceService, config.urls.audience),
    groups: connectClient(GroupService, config.urls.audience),
    templates: connectClient(TemplateService, config.urls.accounts),
    topics: connectClient(TopicService, config.urls.audience),
    team: connectClient(TeamService, config.urls.accounts),
    automation: connectClient(AutomationService, config.urls.automation),
    inbound: connectClient(InboundService, config.urls.inbound),
    receiving: connectClient(ReceivingService, config.urls.inbound),
  };
}

/** Call options that carry the request id, and the actor of a signed-in request, to the next hop. */
export function rpcOptions(request: FastifyRequest): RequestCallOptions {
  const options = callOptionsFor(String(request.id));
  const actor = actorOf(request);
  if (actor) options.headers[ACTOR_HEADER] = actor;
  // The console knows who that is (the member's address, the key's name): the log shows it.
  const label = request.consoleSession?.memberEmail || request.consoleSession?.keyName;
  if (actor && label) options.headers[ACTOR_LABEL_HEADER] = actorLabelHeaderValue(label);
  return options;
}

/**
 * Who acts for the audit log (x-mailroom-actor): the console session's member (or the key it
 * was signed in with), else the request's API key; none for public routes.
 */
export function actorOf(request: FastifyRequest): string | undefined {
  if (request.consoleSession) return request.consoleSession.actor;
  if (request.auth) return actorHeaderValue("key", request.auth.keyId);
  return undefined;
}

/** The same for a call made on a request's behalf but outside it (a lookup shared by concurrent requests). */
export function callOptionsFor(requestId: string, timeoutMs = 30_000): RequestCallOptions {
  return { headers: { "x-request-id": requestId }, timeoutMs };
}

/** How long and how much of an unread request body is drained after its answer (gateway/src/lingering-close.ts). */
export interface DrainLimits {
  /** Milliseconds from the answer until the connection is closed, whatever the client still sends. */
  ms: number;
  /** Body bytes read and discarded after the answer before the connection is closed. */
  bytes: number;
}
