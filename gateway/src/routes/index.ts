import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { registerTracking } from "./tracking.js";
import { registerUnsubscribe } from "./unsubscribe.js";
import { registerDevMail } from "./dev-mail.js";
import { registerSendEmail } from "./emails.js";
import { registerSendBatch } from "./emails-batch.js";
import { registerGetEmail } from "./emails-get.js";
import { registerCancelEmail } from "./emails-cancel.js";
import { registerContacts } from "./contacts.js";
import { registerContactItem } from "./contacts-item.js";
import { registerTemplates } from "./templates.js";
import { registerTemplateItem } from "./templates-item.js";
import { registerOpenApi } from "./openapi.js";

/** A public route module: one file per route, registering itself on the app. */
export type RouteModule = (app: FastifyInstance, deps: GatewayDeps) => void;

/**
 * Routes under /v1 that need an API key. Each module registers its own path(s);
 * the authenticated scope (auth hook, rate limit) is applied around all of them.
 */
export const apiRoutes: RouteModule[] = [
  registerSendEmail, registerSendBatch, registerGetEmail, registerCancelEmail,
  registerContacts, registerContactItem, registerTemplates, registerTemplateItem,
];

/** Public routes without an API key: tracking pixels, click redirects, unsubscribe. */
export const publicRoutes: RouteModule[] = [registerTracking, registerUnsubscribe, registerDevMail, registerOpenApi];
