import { z } from "zod";
import type { FastifyInstance, RouteOptions } from "fastify";
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject, type ZodOpenApiResponseObject } from "zod-openapi";
import { apiErrorSchema, unauthorizedErrorSchema } from "@mailroom/http/errors.js";

/**
 * The OpenAPI 3.1 document is generated, never written by hand: every route declares its
 * operation (summary, tags, zod schemas of params, query, body and each response) in its
 * route config, and the document is assembled from the routes the app actually registered.
 * A route without a declaration is simply missing from the document (openapi.test.ts fails).
 *
 * The zod-to-OpenAPI work is zod-openapi's (5.4.x): it takes zod 4 schemas as they are
 * (`.meta({ id })` makes a component, the same marks the routes already use), renders them
 * with zod's own JSON Schema conversion (input side for requests, output side for responses),
 * and runs on Node 20 (its 6.x line needs Node 22.14). @asteasolutions/zod-to-openapi needs a
 * registry of its own, and @fastify/swagger with fastify-type-provider-zod would move the
 * parsing into Fastify's schema compiler; this module only maps route declarations to it.
 */

type JsonSchema = Record<string, unknown>;

/** A response of one status: JSON (`body`) or other media types (`content`), optionally with headers. */
export interface ResponseDoc {
  description: string;
  body?: z.ZodType;
  content?: Record<string, z.ZodType>;
  headers?: Record<string, { description: string; required?: boolean; schema: JsonSchema }>;
}

/** Responses every /v1 route (or every link route) shares, documented once under components.responses. */
const SHARED_RESPONSES = {
  Unauthorized: { description: "Missing, malformed, unknown or under-scoped API key.", body: unauthorizedErrorSchema },
  PayloadTooLarge: {
    description: "Request body too large: code `payload_too_large`. Sends allow 5 MB of HTML and 10 MB of attachments per email (~25.5 MB of JSON for one email, 25 MB for a batch); other endpoints 2 MB.",
    body: apiErrorSchema,
  },
  UnsupportedMediaType: { description: "A body that is not `application/json`: code `unsupported_media_type`.", body: apiErrorSchema },
  RateLimited: {
    description: "Too many requests for this API key (a token bucket per key, shared by every gateway process), or too many failed API key attempts from this client address: code `rate_limited`. Successful answers of `/v1` routes carry the `RateLimit-*` headers too.",
    body: apiErrorSchema,
    headers: {
      "Retry-After": { description: "Seconds until a request is accepted again.", required: true, schema: { type: "integer", minimum: 1 } },
      "RateLimit-Limit": { description: "The key's bucket size: requests it may send at once.", schema: { type: "integer" } },
      "RateLimit-Remaining": { description: "Requests left in the bucket now.", schema: { type: "integer" } },
      "RateLimit-Reset": { description: "Seconds until a request is accepted again (on a 429), or until the bucket is full (otherwise).", schema: { type: "integer" } },
    },
  },
  ServiceUnavailable: { description: "A backing service is unavailable: code `service_unavailable`; retry shortly.", body: apiErrorSchema },
  LinkNotFound: { description: "Unknown, tampered or foreign token: code `not_found` (never a redirect).", body: apiErrorSchema },
} satisfies Record<string, ResponseDoc>;

export type SharedResponse = keyof typeof SHARED_RESPONSES;

/** The statuses every authenticated route can answer whatever it does. */
export const API_KEY_RESPONSES = { 401: "Unauthorized", 429: "RateLimited", 503: "ServiceUnavailable" } as const satisfies Record<number, SharedResponse>;
/** …and those of a route that reads a JSON body. */
export const JSON_BODY_RESPONSES = { 413: "PayloadTooLarge", 415: "UnsupportedMediaType" } as const satisfies Record<number, SharedResponse>;

export const TAGS = [
  { name: "Emails", description: "Transactional emails." },
  { name: "Contacts", description: "The workspace's contacts (merge data, subscription state)." },
  { name: "Templates", description: "Stored templates for templated emails (also served as the official client's `transactional` resource)." },
  { name: "Contact properties", description: "Custom contact properties (the official client's `contacts.*Property`)." },
  { name: "Events", description: "Events about contacts, stored per contact and published on the event stream." },
  { name: "API keys", description: "The calling key and the keys of its own workspace (roles EDITOR and VIEWER)." },
  { name: "Identities", description: "The senders the workspace may use." },
  { name: "Broadcasts", description: "Marketing sends to the workspace's subscribed contacts (early access: gated by the early-access flag, the Email API add-on and a verified workspace, in that order)." },
  { name: "Recipients", description: "Links inside sent messages: open pixel, click redirects, unsubscribe. No API key; tokens are HMAC-signed." },
  { name: "Operations", description: "Health and this document." },
  { name: "Development", description: "Local mail capture, only when no SMTP relay is configured." },
  { name: "Stats", description: "Outcome counters and rates of transactional emails and broadcasts." },
  { name: "Webhooks", description: "Signed HTTP callbacks for contact, workspace and email events." },
  { name: "Forms", description: "Signup forms with double opt-in: hosted pages and an embeddable endpoint (`/f/{id}`, no API key), a signed confirmation link (`/c/{token}`)." },
  { name: "Segments", description: "Saved filters (the §9.4 filter language) with an exact count and their contacts; broadcast audiences name them." },
  { name: "Groups", description: "Named sets of contacts (the official client's `groups`), each unique by your own `publicId`; joining and leaving send `CONTACT_TAG_ADDED` / `CONTACT_TAG_REMOVED`." },
  { name: "Topics", description: "What broadcasts are about; each contact's choices (also on the recipients' preference page)." },
  { name: "Provider webhooks", description: "Event webhooks of the relay providers Mailroom sends through (Amazon SES via SNS, Postmark, SendGrid, Mailgun): bounces, complaints and deliveries they report. No API key; each provider's own signature or credentials authenticate it." },
  { name: "Automations", description: "Workflows that run themselves (DESIGN §9.6): a trigger enrols a contact, steps send, wait, branch and change the contact; versions, pause and resume, runs and per-step counts." },
  { name: "Suppressions", description: "Addresses and whole domains no mail goes to (hard bounces, complaints, unsubscribes, added by hand, imported): list, add, lift, CSV import and export (DESIGN §10.3). Every send path checks them: single sends, batch items, broadcast recipients, automation sends." },
  { name: "Audit log", description: "Every change made through the API, the console and the CLI: who (key, member, CLI user), what, when, the resource and the changed fields without secrets (DESIGN §9.9). Owners and admins." },
  { name: "Receiving", description: "Mail the workspace receives (DESIGN §10.4): inbound domains (verified by an MX record naming the inbound host) and their rules (`webhook`, `forward`, `store`), received emails with their bodies, headers and the reply they answer, attachments and raw messages downloaded by API." },
] as const;

/** One operation, as a route declares it. Whether it needs the API key follows from where it is registered. */
export interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  tags: Array<(typeof TAGS)[number]["name"]>;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** A required JSON request body. */
  body?: z.ZodType;
  /** A request body in other media types. */
  requestContent?: { required: boolean; content: Record<string, z.ZodType> };
  responses: Record<number, ResponseDoc | SharedResponse>;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route's OpenAPI operation. */
    openapi?: OperationDoc;
    /** Set on routes registered in the authenticated scope. */
    requiresApiKey?: boolean;
  }
  interface FastifyInstance {
    /** The OpenAPI document of the routes registered so far (complete once the app is ready). */
    openapiDocument(): OpenApiDocument;
  }
}

export interface OpenApiDocument {
  openapi: string;
  info: Record<string, unknown>;
  servers?: Array<{ url: string; description?: string }>;
  paths: Record<string, Record<string, unknown>>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, unknown>;
    headers: Record<string, unknown>;
    securitySchemes: Record<string, unknown>;
  };
  [key: string]: unknown;
}

const INFO = {
  title: "Mailroom public API",
  version: "1.0.0",
  description: [
    "The public HTTP API of the Mailroom gateway: transactional emails (single and batch, raw or templated), contacts and templates under `/v1`, plus the recipient-facing tracking and unsubscribe links.",
    "Every `/v1` endpoint needs `Authorization: Bearer <API_KEY>` with scope `api_user` (role EDITOR); the reading endpoints of contacts, properties, transactional templates, identities and API keys also take scope `api_read` (role VIEWER). The workspace is derived from the key. Requests with a body must be `Content-Type: application/json` (else 415), at most 2 MB (else 413; sends allow 5 MB of HTML and 10 MB of attachments per email, and 25 MB per batch); malformed JSON is a 400 `invalid_json`; an unknown route is a 404 `not_found`.",
    "Error bodies are `{ statusCode, error, code, message, docsUrl }`: the spec's body plus a machine-readable `code` (the four error rows of the email endpoints in the spec keep their fields: invalid payload, invalid from with `allowedEmails`/`allowedDomains`, unauthorized, monthly limit) and, per code, extra fields. Every code is documented at `/docs/errors/{code}` (HTML), where `docsUrl` points; a refusal that a setting lifts names the setting or the admin CLI command in `message`.",
    "Every response carries `x-request-id`: the caller's own when it sent an acceptable one (printable ASCII, at most 128 characters), else a generated one. Rate limits: a token bucket per API key shared by every gateway process (429 with `Retry-After` and `RateLimit-Limit`/`RateLimit-Remaining`/`RateLimit-Reset`), and failed API key attempts are limited per client address.",
    "Broadcast endpoints (early access) are gated in this order: 403 `broadcast_api_not_enabled`, 402 `broadcast_api_addon_required`, 403 `broadcast_api_workspace_not_verified`; their errors carry, per code, `unknownVariables`, `allowedEmails`/`allowedDomains` or `notMembers`, and a request their schema refuses is a 400 `invalid_payload`.",
    "This document is generated at start from the routes the gateway registers and their zod schemas (gateway/src/openapi.ts); gateway/src/openapi.test.ts validates real responses against it.",
  ].join("\n\n"),
};

const HTTP_METHODS = new Set(["get", "put", "post", "delete", "patch", "options"]);

/** Sent on every response (components.headers.XRequestId). */
const REQUEST_ID_HEADER = {
  description: "The request's id: the caller's `x-request-id` when it sent an acceptable one (printable ASCII, at most 128 characters), else a generated one. Also passed to the internal services; quote it when reporting a problem.",
  required: true,
  schema: { type: "string" as const, maxLength: 128 },
};

function responseObject(r: ResponseDoc): ZodOpenApiResponseObject {
  const content: NonNullable<ZodOpenApiResponseObject["content"]> = {};
  if (r.body) content["application/json"] = { schema: r.body };
  for (const [media, schema] of Object.entries(r.content ?? {})) content[media] = { schema };
  return {
    description: r.description,
    headers: { "x-request-id": { $ref: "#/components/headers/XRequestId" }, ...r.headers },
    ...(Object.keys(content).length ? { content } : {}),
  };
}

/** `/v1/emails/:id/cancel` -> `/v1/emails/{id}/cancel`. */
export const openApiPath = (url: string) => url.replace(/:(\w+)/g, "{$1}");

interface RegisteredRoute {
  method: string;
  url: string;
  /** Read when the document is built: hooks of inner scopes may still add to the route's config. */
  options: RouteOptions;
}

function operation(path: string, doc: OperationDoc, requiresApiKey: boolean): ZodOpenApiOperationObject {
  // A path parameter the route does not describe is still a string in the path.
  const declared = doc.params?.shape ?? {};
  const undeclared = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).filter((name) => !(name in declared));
  const pathParams = undeclared.length
    ? (doc.params ?? z.object({})).extend(Object.fromEntries(undeclared.map((name) => [name, z.string()])))
    : doc.params;
  const requestParams = { ...(pathParams ? { path: pathParams } : {}), ...(doc.query ? { query: doc.query } : {}) };
  const requestBody = doc.body
    ? { required: true, content: { "application/json": { schema: doc.body } } }
    : doc.requestContent
      ? { required: doc.requestContent.required, content: Object.fromEntries(Object.entries(doc.requestContent.content).map(([media, schema]) => [media, { schema }])) }
      : undefined;
  return {
    operationId: doc.operationId,
    tags: doc.tags,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    // The document-wide default is the API key; routes outside the authenticated scope need none.
    ...(requiresApiKey ? {} : { security: [] }),
    ...(Object.keys(requestParams).length ? { requestParams } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: Object.fromEntries(
      Object.entries(doc.responses).map(([status, r]) => [status, typeof r === "string" ? { $ref: `#/components/responses/${r}` } : responseObject(r)]),
    ),
  };
}

export function buildOpenApiDocument(routes: RegisteredRoute[], serverUrl?: string): OpenApiDocument {
  const paths: ZodOpenApiPathsObject = {};
  for (const { method, url, options } of routes) {
    const doc = options.config?.openapi;
    if (!doc || !HTTP_METHODS.has(method)) continue;
    const path = openApiPath(url);
    paths[path] ??= {};
    paths[path][method as "get"] = operation(path, doc, !!options.config?.requiresApiKey);
  }
  const document = createDocument({
    openapi: "3.1.0",
    info: INFO,
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    security: [{ bearerAuth: [] }],
    tags: TAGS.map((t) => ({ ...t })),
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: "An API key with scope `api_user` (EDITOR), or `api_read` (VIEWER) on reading endpoints." } },
      responses: Object.fromEntries(Object.entries(SHARED_RESPONSES).map(([name, r]) => [name, responseObject(r)])),
      headers: { XRequestId: REQUEST_ID_HEADER },
    },
  });
  // A parameter's description is lifted out of its schema (zod-openapi leaves a copy in both).
  for (const item of Object.values(document.paths ?? {})) {
    for (const op of Object.values(item) as Array<{ parameters?: Array<{ description?: string; schema?: { description?: string } }> }>) {
      for (const p of op.parameters ?? []) if (p.schema && p.schema.description === p.description) delete p.schema.description;
    }
  }
  const { securitySchemes = {}, schemas = {}, responses = {}, headers = {} } = document.components ?? {};
  // zod-openapi's types are interfaces without index signatures; the shape is the one declared above.
  return { ...document, components: { securitySchemes, schemas, responses, headers } } as unknown as OpenApiDocument;
}

/**
 * Records every route the app registers (fastify's onRoute hook, so it must be installed
 * before any route) and decorates the app with `openapiDocument()`.
 */
export function collectOpenApi(app: FastifyInstance, serverUrl: string): void {
  const routes: RegisteredRoute[] = [];
  app.addHook("onRoute", (options) => {
    for (const method of [options.method].flat()) routes.push({ method: method.toLowerCase(), url: options.url, options });
  });
  app.decorate("openapiDocument", () => buildOpenApiDocument(routes, serverUrl));
}
