import { memoryTransport } from "@mailroom/kit/connect.js";
import { afterAll, beforeAll, expect } from "vitest";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { Code, ConnectError, createClient} from "@connectrpc/connect";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { DeliveryService } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import type { MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { badRequest, notFound } from "@mailroom/kit/errors.js";
import { directoryRoutes, memoryDirectory } from "../../services/audience/src/testing.js";
import { emailRoutes } from "../../services/email/src/routes.js";
import { buildTestWorld, ManualClock, type TestWorld } from "../../services/email/src/testing.js";
import { signLinkToken, signRecipientToken } from "@mailroom/content/tokens.js";
import { WebhookService } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { BroadcastService, BroadcastStatus } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { appError } from "@mailroom/kit/errors.js";
import { webhookRoutes } from "../../services/webhooks/src/routes.js";
import { buildTestDomain as buildWebhooksDomain } from "../../services/webhooks/src/testing.js";
import { TopicService } from "@mailroom/proto/audience/v1/topics_pb.js";
import { topicRoutes } from "../../services/audience/src/topic-routes.js";
import { Topics } from "../../services/audience/src/domain/topics.js";
import { TopicStore } from "../../services/audience/src/adapters/topic-store.js";
import { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import { groupRoutes } from "../../services/audience/src/group-routes.js";
import { Groups } from "../../services/audience/src/domain/groups.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { PreSendCheckService } from "@mailroom/proto/broadcast/v1/check_pb.js";
import { checkRoutes } from "../../services/broadcast/src/check-routes.js";
import { PreSendCheck } from "../../services/broadcast/src/domain/check/pre-send-check.js";
import { GroupMembershipStore, GroupStore } from "../../services/audience/src/adapters/group-store.js";
import { AudienceService } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { audienceRoutes } from "../../services/audience/src/audience-routes.js";
import { AudienceStore } from "../../services/audience/src/adapters/audience-store.js";
import { SegmentStore } from "../../services/audience/src/adapters/segment-store.js";
import { ContactFilters } from "../../services/audience/src/adapters/contact-filter.js";
import { Segments } from "../../services/audience/src/domain/segments.js";
import { Audiences } from "../../services/audience/src/domain/audiences.js";
import { FormService } from "@mailroom/proto/audience/v1/forms_pb.js";
import { formRoutes, openForms } from "../../services/audience/src/form-routes.js";
import { buildGateway } from "./app.js";
import { AutomationService } from "@mailroom/proto/automation/v1/automation_pb.js";
import { automationRoutes } from "../../services/automation/src/routes.js";
import { buildCatalogWorld } from "../../services/automation/src/testing.js";

/** Segments and audiences over the test accounts and audience units' store, with the real filter compiler (the store is kept to plant a stale segment). */
export let audienceStoreOf: import("@mailroom/store/port.js").Store | undefined;
async function audiencesClient(dir: Awaited<ReturnType<typeof memoryDirectory>>) {
  audienceStoreOf = dir.store;
  const queries = await AudienceStore.open(dir.store, (await ContactFilters.open(dir.store)).compileContactFilter);
  const segments = new Segments(await SegmentStore.open(dir.store), queries, dir.workspaces);
  return createClient(AudienceService, memoryTransport(audienceRoutes(segments, new Audiences(queries, queries, segments, dir.workspaces))));
}
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";

/**
 * What the openapi*.test.ts files share: the gateway over the real accounts, audience and email services
 * (in memory), the document it serves as ajv validators, `call` (drives an operation and checks
 * the response against the document for its status) and which file drives which responses.
 * Each test file builds its own gateway (useOpenApiGateway) and checks its own concern's coverage.
 */

// ajv-formats is CommonJS; under NodeNext its default export arrives as the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

export type Schema = Record<string, unknown>;
export interface MediaType { schema?: Schema }
export interface Response { description: string; content?: Record<string, MediaType>; headers?: Record<string, { required?: boolean }>; $ref?: string }
export interface Operation { operationId: string; security?: unknown[]; requestBody?: { required?: boolean; content: Record<string, MediaType> }; responses: Record<string, Response> }
export interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; responses: Record<string, Response> };
}

/** The document as the gateway serves it; loaded before the tests run (see beforeAll). */
export let doc: Document;
export const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];
export const SECRET = "openapi-test-secret-0123456789";
export const KEY_A = { authorization: "Bearer mr_test_openapi_a_1" };
export const KEY_B = { authorization: "Bearer mr_test_openapi_b_1" };

// --- the document as validators -------------------------------------------------------

const SCHEMAS_ID = "https://mailroom.dev/openapi/schemas";
/** Points component refs at one Ajv schema holding every component under $defs. */
function rewriteRefs<T>(node: T): T {
  if (Array.isArray(node)) return node.map(rewriteRefs) as T;
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = k === "$ref" && typeof v === "string" ? v.replace("#/components/schemas/", `${SCHEMAS_ID}#/$defs/`) : rewriteRefs(v);
  }
  return out as T;
}

// Strict mode: a misspelt keyword in the document is an error, not a silently ignored word.
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
addFormats(ajv);

function useDocument(served: Document): void {
  doc = served;
  ajv.addSchema({ $id: SCHEMAS_ID, $defs: rewriteRefs(doc.components.schemas) });
}

// Keyed by the schema itself: most responses share a few schemas, and compiling is the slow part.
const compileCache = new Map<string, ValidateFunction>();
export function validatorFor(schema: Schema): ValidateFunction {
  const key = JSON.stringify(schema);
  let v = compileCache.get(key);
  if (!v) {
    v = ajv.compile(rewriteRefs(schema));
    compileCache.set(key, v);
  }
  return v;
}

export const componentValidator = (name: string) => validatorFor({ $ref: `#/components/schemas/${name}` });

export function resolveResponse(r: Response): { response: Response; component?: string } {
  if (!r.$ref) return { response: r };
  const name = r.$ref.replace("#/components/responses/", "");
  const response = doc.components.responses[name];
  if (!response) throw new Error(`unresolved response ${r.$ref}`);
  return { response, component: name };
}

/** "POST /v1/emails/{id}/cancel" -> the operation, its path template and method. */
export function operation(op: string): { method: string; path: string; operation: Operation } {
  const [method, path] = op.split(" ");
  const found = doc.paths[path]?.[method.toLowerCase()];
  if (!found) throw new Error(`${op} is not documented`);
  return { method, path, operation: found };
}

export const templateToRegExp = (path: string) => new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`);
export const templateToFastify = (path: string) => path.replace(/\{([^}]+)\}/g, ":$1");

export function schemaErrors(v: ValidateFunction): string {
  return ajv.errorsText(v.errors, { separator: "\n  " });
}

/** Operation/status pairs (and shared responses) the suite has driven through the gateway. */
export const covered = new Set<string>();
export const coveredComponents = new Set<string>();

/** Validates a real response against the operation's documented response for its status. */
export function checkResponse(op: string, url: string, res: LightMyRequestResponse): void {
  const { path, operation: o } = operation(op);
  expect(url.split("?")[0], `${url} does not match ${op}`).toMatch(templateToRegExp(path));
  const documented = o.responses[String(res.statusCode)];
  expect(documented, `${op} answered ${res.statusCode}, which the document does not list: ${res.body.slice(0, 300)}`).toBeDefined();
  const { response, component } = resolveResponse(documented);
  covered.add(`${op} ${res.statusCode}`);
  if (component) coveredComponents.add(component);

  for (const [name, header] of Object.entries(response.headers ?? {})) {
    if (header.required) expect(res.headers[name.toLowerCase()], `${op} ${res.statusCode}: header ${name}`).toBeDefined();
  }
  if (!response.content) return;
  const mediaType = String(res.headers["content-type"] ?? "").split(";")[0].trim();
  expect(Object.keys(response.content), `${op} ${res.statusCode}: content type ${mediaType}`).toContain(mediaType);
  const schema = response.content[mediaType].schema;
  if (mediaType !== "application/json" || !schema) return;
  const body = res.json() as { statusCode?: unknown };
  const v = validatorFor(schema);
  if (!v(body)) throw new Error(`${op} ${res.statusCode}: body does not match the document:\n  ${schemaErrors(v)}\nbody: ${res.body.slice(0, 600)}`);
  if (res.statusCode >= 400) expect(body.statusCode, `${op}: statusCode in the body`).toBe(res.statusCode);
}

/** Whether a JSON request body is valid by the operation's documented request schema. */
export function requestIsValid(op: string, body: unknown): { valid: boolean; errors: string } {
  const { operation: o } = operation(op);
  const schema = o.requestBody?.content["application/json"]?.schema;
  if (!schema) throw new Error(`${op} documents no JSON request body`);
  const v = validatorFor(schema);
  const valid = v(body) as boolean;
  return { valid, errors: valid ? "" : schemaErrors(v) };
}

// --- the gateway over in-memory services -------------------------------------------------

export interface Call {
  url?: string;
  body?: unknown;
  /** A raw payload instead of JSON. */
  payload?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

export let app: FastifyInstance;
/** A second gateway whose email service is down and whose rate limit is tiny: 503 and 429. */
export let degraded: FastifyInstance;
export let world: TestWorld;
export let contactsClient: ServiceClients["contacts"];
export const capturedQueries: { query: string; cursor: string; limit: number }[] = [];
export let capturedCleared = 0;
/** The test's own calls to the accounts and audience units, outside any request. */
export const TEST_CALL = { headers: { "x-request-id": "openapi-test" } };
export const events: MailEvent[] = [];

export const recipient = { workspaceId: "ws_oa", messageId: "<m1@acme.test>", email: "ann@example.test", contactId: "", contentId: "trs_01jqz8k4m2x7v9c3n5b6t1w0ye" };
export const recipientToken = signRecipientToken(SECRET, recipient);
export const linkToken = signLinkToken(SECRET, { contentId: recipient.contentId, index: 0, url: "https://acme.test/pricing?plan=pro" });
const capturedAt = timestampNow();

/**
 * Builds the gateway over in-memory services before the calling file's tests and closes it
 * after them: every openapi-*.test.ts file drives its own gateway (and its own coverage).
 */
export function useOpenApiGateway(): void {
  beforeAll(async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load({
      workspaces: [
        { id: "ws_oa", name: "A", apiKeys: [{ key: "mr_test_openapi_a_1" }], contactProperties: [{ slug: "plan", type: "string" }, { slug: "seats", type: "number" }] },
        { id: "ws_ob", name: "B", apiKeys: [{ key: "mr_test_openapi_b_1" }] },
      ],
    });
    world = await buildTestWorld({ clock: new ManualClock(Date.now()) });
    world.directory.templates.set("welcome", { name: "welcome", subject: "Hi {{firstName}}", html: "<p>Hi {{firstName}}</p>", text: "", previewText: "" });

    const delivery = createClient(DeliveryService, memoryTransport(({ service }) => {
      const message = { id: "cap_1", messageId: "<m1@acme.test>", from: "founder@gmail.test", to: "ann@example.test", subject: "Hello", capturedAt, size: 420n, deliveryId: "dlv_1", workspaceId: "ws_oa" };
      service(DeliveryService, {
        listCapturedMessages(req) {
          if (req.cursor && !/^cap_\w+$/.test(req.cursor)) throw badRequest("invalid_cursor", "cursor must be a next_cursor this service returned");
          capturedQueries.push({ query: req.query, cursor: req.cursor, limit: req.limit });
          return { messages: [message], nextCursor: req.cursor ? "" : "cap_1" };
        },
        clearCapturedMessages: () => { capturedCleared++; return { cleared: 1n }; },
        getCapturedMessage(req) {
          if (!/^[\w-]{1,128}$/.test(req.id)) throw badRequest("invalid_id", "id must be 1-128 letters, digits, '_' or '-'");
          if (req.id !== "cap_1") throw notFound("captured_message_not_found", `no captured message ${req.id}`);
          return { message, raw: new TextEncoder().encode("Subject: Hello\r\n\r\nHi Ann\r\n"), html: "<p>Hi Ann</p>", text: "Hi Ann" };
        },
      });
    }));
    // One router serves AccountsService, ContactService and TemplateService (CRUD and previews).
    const directoryTransport = memoryTransport(directoryRoutes(dir));
    contactsClient = createClient(ContactService, directoryTransport);
    // Broadcasts: one in ws_oa with progress; two ids stand for the service's gating refusals.
    const broadcast = createClient(BroadcastService, memoryTransport(({ service }) => {
      service(BroadcastService, {
        getBroadcast(req) {
          if (req.id === "cmp_addon") throw appError({ code: "broadcast_api_addon_required", httpStatus: 402, message: "add-on required" });
          if (req.id === "cmp_not_enabled") throw appError({ code: "broadcast_api_not_enabled", httpStatus: 403, message: "not enabled" });
          if (req.id !== "cmp_known" || req.workspaceId !== "ws_oa") throw notFound("broadcast_not_found", `Broadcast ${req.id} not found`);
          return { broadcast: { id: "cmp_known", status: BroadcastStatus.IN_PROGRESS, progress: { recipients: 10n, released: 10n, sent: 8n, delivered: 7n, bounced: 1n, opened: 4n, clicked: 2n } } };
        },
      });
    }));
    const clients = {
      accounts: createClient(AccountsService, directoryTransport),
      contacts: contactsClient,
      email: createClient(EmailService, memoryTransport(emailRoutes(world.service))),
      webhooks: createClient(WebhookService, memoryTransport(webhookRoutes((await buildWebhooksDomain()).webhooks))),
      broadcast,
      delivery,
      audiences: await audiencesClient(dir),
      forms: createClient(FormService, memoryTransport(formRoutes(await openForms(dir.store, dir)))),
      topics: createClient(TopicService, memoryTransport(topicRoutes(new Topics(await TopicStore.open(dir.store), dir.workspaces)))),
      templates: createClient(TemplateService, directoryTransport),
      groups: createClient(GroupService, memoryTransport(groupRoutes(new Groups(await GroupStore.open(dir.store), await GroupMembershipStore.open(dir.store), dir.workspaces)))),
      automation: createClient(AutomationService, memoryTransport(automationRoutes((await buildCatalogWorld()).automations))),
      // Template checks (the broadcast unit's CheckContent): links all answer 200, no spam filter.
      check: createClient(PreSendCheckService, memoryTransport(checkRoutes(new PreSendCheck({
        broadcasts: { get: async () => { throw new Error("not in this test"); }, preview: async () => { throw new Error("not in this test"); } },
        directory: { subscribedContacts: async function* () {} },
        links: { check: async (urls) => urls.map((url) => ({ url, status: 200, redirects: [], finalUrl: url })) },
        spam: { score: async () => ({ scored: false, skipped: "no spam filter in this test" }) },
        clock: { now: () => new Date() },
        logger: createLogger("gateway-openapi-test-check", "silent"),
      })))),
    } as unknown as ServiceClients;
    const deps: GatewayDeps = {
      config: { ...loadConfig({}), secret: SECRET },
      capturesMail: true,
      logger: createLogger("gateway-openapi-test", "silent"),
      clients,
      tracking: { publish: async (e) => void events.push(e) },
      rateLimitPerMinute: 0,
      authCacheMs: 60_000,
    };
    app = await buildGateway(deps);
    const served = await app.inject({ method: "GET", url: "/openapi.json" });
    expect(served.statusCode).toBe(200);
    useDocument(served.json() as Document);

    // A second gateway whose email service is down and whose rate limit is tiny: 503 and 429.
    const down = createClient(EmailService, memoryTransport(({ service }) => {
      service(EmailService, {
        sendEmail() { throw new ConnectError("connection refused", Code.Unavailable); },
      });
    }));
    degraded = await buildGateway({ ...deps, clients: { ...clients, email: down } as ServiceClients, rateLimitPerMinute: 2 });
  });

  afterAll(async () => {
    await app?.close();
    await degraded?.close();
  });
}

/** Calls an operation through the gateway and checks the response against the document. */
export async function call(op: string, c: Call = {}, on: FastifyInstance = app): Promise<LightMyRequestResponse> {
  const { method, path } = operation(op);
  const url = c.url ?? path;
  const hasBody = c.body !== undefined || c.payload !== undefined;
  const headers: Record<string, string> = { ...(operation(op).operation.security?.length === 0 ? {} : KEY_A), ...c.headers };
  if (hasBody) headers["content-type"] = c.contentType ?? "application/json";
  const res = await on.inject({
    method: method as "GET",
    url,
    headers,
    payload: c.payload ?? (c.body === undefined ? undefined : JSON.stringify(c.body)),
  });
  checkResponse(op, url, res);
  return res;
}

export const rawEmail = { from: "Acme <hello@acme.test>", to: "ann@example.test", subject: "Welcome", html: "<p>Hi</p>" };
export const templatedEmail = { template: "welcome", to: "bob@example.test", variables: { firstName: "Bob" } };
export const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();


// --- which file drives which responses ----------------------------------------------------

/**
 * Operations whose responses other suites drive: broadcast operations in routes/broadcasts.test.ts
 * (over the broadcast domain; a broadcast's stats are driven here, with the other outcome routes),
 * automations and a contact's runs in routes/automations-api.test.ts (over the automation catalog),
 * relay provider webhooks in routes/provider-webhooks.test.ts (over the inbound unit's reader),
 * the audit log in routes/audit-log.test.ts, a contact's activity in routes/contacts-activity.test.ts,
 * receiving email in routes/receiving.test.ts (over a stand-in ReceivingService), a domain's DMARC
 * summary in routes/domains-dmarc.test.ts.
 */
export const drivenElsewhere = (p: string) =>
  (p.startsWith("/v1/broadcasts") && !p.endsWith("/stats")) || p.startsWith("/v1/automations") || p === "/v1/contacts/{id}/automation-runs" ||
  p === "/v1/contacts/{id}/activity" || p.startsWith("/v1/inbound/") || p.startsWith("/v1/received-emails") ||
  p.startsWith("/webhooks/") || p === "/v1/audit-log" || p === "/v1/domains/{id}/dmarc";

const AUDIENCE_PATHS = /^\/(v1\/(segments|topics|forms|groups|suppressions)\b|v1\/contacts\/\{id\}\/topics$|u\/\{token\}\/topics$|[cf]\/)/;

/**
 * The openapi-*.test.ts files by concern: the paths whose documented responses each drives,
 * and the shared responses (components.responses) it produces. openapi.test.ts checks that
 * every documented path has one owner and every shared response is driven by one of them.
 */
export const CONCERNS = {
  /** openapi.test.ts: the document itself, recipient links, health, metrics, development routes. */
  document: {
    paths: (p: string) => p === "/openapi.json" || (/^\/(healthz|readyz|metrics|dev\/|t\/|u\/)/.test(p) && !AUDIENCE_PATHS.test(p)),
    shared: ["LinkNotFound"],
  },
  /** openapi-emails.test.ts: sending, listing, exporting emails, their outcomes, stats, webhooks, error pages. */
  emails: {
    paths: (p: string) => /^\/(v1\/(emails|stats|webhooks)\b|v1\/broadcasts\/\{id\}\/stats$|docs\b)/.test(p),
    shared: ["Unauthorized", "PayloadTooLarge", "UnsupportedMediaType", "RateLimited", "ServiceUnavailable"],
  },
  /** openapi-contacts.test.ts: contacts, their properties and events, templates, API keys, identities. */
  contacts: {
    paths: (p: string) => /^\/v1\/(contacts|contact-properties|events|templates|transactional|api-keys|workspaces|identities)\b/.test(p) && !AUDIENCE_PATHS.test(p),
    shared: [] as string[],
  },
  /** openapi-audiences.test.ts: segments, topics, signup forms, groups, suppressions. */
  audiences: { paths: (p: string) => AUDIENCE_PATHS.test(p), shared: [] as string[] },
} satisfies Record<string, { paths: (p: string) => boolean; shared: string[] }>;

/** Every documented response of the file's concern was produced by an operation this file drove. */
export function expectDriven(concern: keyof typeof CONCERNS): void {
  const { paths, shared } = CONCERNS[concern];
  // Shared responses (401, 413, 415, 429, 503, link 404) are checked once each, on any
  // operation; every response an operation documents itself was produced by that operation.
  const missing: string[] = [];
  for (const [path, item] of Object.entries(doc.paths).filter(([p]) => !drivenElsewhere(p) && paths(p))) {
    for (const [method, o] of Object.entries(item)) {
      for (const [status, r] of Object.entries(o.responses)) {
        const key = `${method.toUpperCase()} ${path} ${status}`;
        if (!r.$ref && !covered.has(key)) missing.push(key);
      }
    }
  }
  expect(missing).toEqual([]);
  expect(shared.filter((name) => !coveredComponents.has(name))).toEqual([]);
}
