import { memoryTransport } from "@mailroom/kit/connect.js";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { parse as parseCsv } from "csv-parse/sync";
import { Code, ConnectError, createClient} from "@connectrpc/connect";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { DirectoryService, SuppressionReason } from "@mailroom/proto/directory/v1/directory_pb.js";
import { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { DeliveryService } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import type { MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { badRequest, notFound } from "@mailroom/kit/errors.js";
import { directoryRoutes } from "../../services/directory/src/routes.js";
import { memoryDirectory } from "../../services/directory/src/testing.js";
import { emailRoutes } from "../../services/email/src/routes.js";
import { buildTestWorld, ManualClock, type TestWorld } from "../../services/email/src/testing.js";
import { signLinkToken, signRecipientToken } from "@mailroom/content/tokens.js";
import { WebhookService } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { BroadcastService, BroadcastStatus } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { appError } from "@mailroom/kit/errors.js";
import { webhookRoutes } from "../../services/webhooks/src/routes.js";
import { buildTestDomain as buildWebhooksDomain } from "../../services/webhooks/src/testing.js";
import { TopicService } from "@mailroom/proto/directory/v1/topics_pb.js";
import { topicRoutes } from "../../services/directory/src/topic-routes.js";
import { Topics } from "../../services/directory/src/domain/topics.js";
import { TopicStore } from "../../services/directory/src/adapters/topic-store.js";
import { GroupService } from "@mailroom/proto/directory/v1/groups_pb.js";
import { groupRoutes } from "../../services/directory/src/group-routes.js";
import { Groups } from "../../services/directory/src/domain/groups.js";
import { TemplateService } from "@mailroom/proto/directory/v1/templates_pb.js";
import { templateRoutes } from "../../services/directory/src/template-routes.js";
import { TemplatePreviews } from "../../services/directory/src/domain/template-previews.js";
import { PreSendCheckService } from "@mailroom/proto/broadcast/v1/check_pb.js";
import { checkRoutes } from "../../services/broadcast/src/check-routes.js";
import { PreSendCheck } from "../../services/broadcast/src/domain/check/pre-send-check.js";
import { GroupMembershipStore, GroupStore } from "../../services/directory/src/adapters/group-store.js";
import { AudienceService } from "@mailroom/proto/directory/v1/audiences_pb.js";
import { audienceRoutes } from "../../services/directory/src/audience-routes.js";
import { AudienceStore } from "../../services/directory/src/adapters/audience-store.js";
import { SegmentStore } from "../../services/directory/src/adapters/segment-store.js";
import { ContactFilters } from "../../services/directory/src/adapters/contact-filter.js";
import { Segments } from "../../services/directory/src/domain/segments.js";
import { Audiences } from "../../services/directory/src/domain/audiences.js";
import { FormService } from "@mailroom/proto/directory/v1/forms_pb.js";
import { formRoutes, openForms } from "../../services/directory/src/form-routes.js";
import { signSignupToken } from "./signup-tokens.js";
import { buildGateway } from "./app.js";
import { AutomationService } from "@mailroom/proto/automation/v1/automation_pb.js";
import { automationRoutes } from "../../services/automation/src/routes.js";
import { buildCatalogWorld } from "../../services/automation/src/testing.js";

/** Segments and audiences over the test directory's store, with the real filter compiler (the store is kept to plant a stale segment). */
let audienceStoreOf: import("@mailroom/store/port.js").Store | undefined;
async function audiencesClient(dir: Awaited<ReturnType<typeof memoryDirectory>>) {
  audienceStoreOf = dir.store;
  const queries = await AudienceStore.open(dir.store, (await ContactFilters.open(dir.store)).compileContactFilter);
  const segments = new Segments(await SegmentStore.open(dir.store), queries, dir.workspaces);
  return createClient(AudienceService, memoryTransport(audienceRoutes(segments, new Audiences(queries, queries, segments, dir.workspaces))));
}
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";

/**
 * The OpenAPI document (generated from the routes' zod schemas, served at /openapi.json)
 * against the gateway: the routes registered are the routes documented, and real responses (the gateway over the real directory and email
 * services, in memory) validate against the documented schemas for their status.
 */

// ajv-formats is CommonJS; under NodeNext its default export arrives as the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

type Schema = Record<string, unknown>;
interface MediaType { schema?: Schema }
interface Response { description: string; content?: Record<string, MediaType>; headers?: Record<string, { required?: boolean }>; $ref?: string }
interface Operation { operationId: string; security?: unknown[]; requestBody?: { required?: boolean; content: Record<string, MediaType> }; responses: Record<string, Response> }
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; responses: Record<string, Response> };
}

/** The document as the gateway serves it; loaded before the tests run (see beforeAll). */
let doc: Document;
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];
const SECRET = "openapi-test-secret-0123456789";
const KEY_A = { authorization: "Bearer mr_test_openapi_a_1" };
const KEY_B = { authorization: "Bearer mr_test_openapi_b_1" };

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
function validatorFor(schema: Schema): ValidateFunction {
  const key = JSON.stringify(schema);
  let v = compileCache.get(key);
  if (!v) {
    v = ajv.compile(rewriteRefs(schema));
    compileCache.set(key, v);
  }
  return v;
}

const componentValidator = (name: string) => validatorFor({ $ref: `#/components/schemas/${name}` });

function resolveResponse(r: Response): { response: Response; component?: string } {
  if (!r.$ref) return { response: r };
  const name = r.$ref.replace("#/components/responses/", "");
  const response = doc.components.responses[name];
  if (!response) throw new Error(`unresolved response ${r.$ref}`);
  return { response, component: name };
}

/** "POST /v1/emails/{id}/cancel" -> the operation, its path template and method. */
function operation(op: string): { method: string; path: string; operation: Operation } {
  const [method, path] = op.split(" ");
  const found = doc.paths[path]?.[method.toLowerCase()];
  if (!found) throw new Error(`${op} is not documented`);
  return { method, path, operation: found };
}

const templateToRegExp = (path: string) => new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`);
const templateToFastify = (path: string) => path.replace(/\{([^}]+)\}/g, ":$1");

function schemaErrors(v: ValidateFunction): string {
  return ajv.errorsText(v.errors, { separator: "\n  " });
}

/** Operation/status pairs (and shared responses) the suite has driven through the gateway. */
const covered = new Set<string>();
const coveredComponents = new Set<string>();

/** Validates a real response against the operation's documented response for its status. */
function checkResponse(op: string, url: string, res: LightMyRequestResponse): void {
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
function requestIsValid(op: string, body: unknown): { valid: boolean; errors: string } {
  const { operation: o } = operation(op);
  const schema = o.requestBody?.content["application/json"]?.schema;
  if (!schema) throw new Error(`${op} documents no JSON request body`);
  const v = validatorFor(schema);
  const valid = v(body) as boolean;
  return { valid, errors: valid ? "" : schemaErrors(v) };
}

// --- the gateway over in-memory services -------------------------------------------------

interface Call {
  url?: string;
  body?: unknown;
  /** A raw payload instead of JSON. */
  payload?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

describe("the generated OpenAPI document against the gateway", () => {
  let app: FastifyInstance;
  let degraded: FastifyInstance;
  let world: TestWorld;
  let directoryClient: ServiceClients["directory"];
  const capturedQueries: { query: string; cursor: string; limit: number }[] = [];
  let capturedCleared = 0;
  /** The test's own calls to the directory, outside any request. */
  const TEST_CALL = { headers: { "x-request-id": "openapi-test" } };
  const events: MailEvent[] = [];

  const recipient = { workspaceId: "ws_oa", messageId: "<m1@acme.test>", email: "ann@example.test", contactId: "", contentId: "trs_01jqz8k4m2x7v9c3n5b6t1w0ye" };
  const recipientToken = signRecipientToken(SECRET, recipient);
  const linkToken = signLinkToken(SECRET, { contentId: recipient.contentId, index: 0, url: "https://acme.test/pricing?plan=pro" });
  const capturedAt = timestampNow();

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
    directoryClient = createClient(DirectoryService, memoryTransport(directoryRoutes(dir)));
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
      directory: directoryClient,
      email: createClient(EmailService, memoryTransport(emailRoutes(world.service))),
      webhooks: createClient(WebhookService, memoryTransport(webhookRoutes((await buildWebhooksDomain()).webhooks))),
      broadcast,
      delivery,
      audiences: await audiencesClient(dir),
      forms: createClient(FormService, memoryTransport(formRoutes(await openForms(dir.store, dir)))),
      topics: createClient(TopicService, memoryTransport(topicRoutes(new Topics(await TopicStore.open(dir.store), dir.workspaces)))),
      templates: createClient(TemplateService, memoryTransport(templateRoutes(dir.templates, new TemplatePreviews(dir.templates, dir.contacts, dir.workspaces)))),
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

  /** Calls an operation through the gateway and checks the response against the document. */
  async function call(op: string, c: Call = {}, on: FastifyInstance = app): Promise<LightMyRequestResponse> {
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

  const rawEmail = { from: "Acme <hello@acme.test>", to: "ann@example.test", subject: "Welcome", html: "<p>Hi</p>" };
  const templatedEmail = { template: "welcome", to: "bob@example.test", variables: { firstName: "Bob" } };
  const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

  describe("routes", () => {
    /** Method and path of every route in the router, from fastify's own listing. */
    function registeredRoutes(): Set<string> {
      const routes = new Set<string>();
      const stack: string[] = [];
      for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
        const m = /^([│├└─ ]*)(\S.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
        if (!m) continue;
        const depth = m[1].length / 4 - 1;
        stack.length = depth;
        stack.push(m[2]);
        const url = stack.join("");
        for (const method of m[3]?.split(", ") ?? []) {
          // HEAD is fastify's automatic twin of every GET.
          if (method !== "HEAD") routes.add(`${method} ${url}`);
        }
      }
      return routes;
    }

    const documented = () =>
      new Set(Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.keys(item).filter((k) => METHODS.includes(k)).map((m) => `${m.toUpperCase()} ${templateToFastify(path)}`)));

    it("lists every registered route in the document", () => {
      const registered = registeredRoutes();
      for (const route of registered) {
        const [method, url] = route.split(" ");
        expect(app.hasRoute({ method: method as "GET", url }), `parsed route ${route}`).toBe(true);
      }
      expect(registered.size).toBeGreaterThan(20);
      // The web console (/console) serves HTML pages, not API operations: never in the document.
      const api = [...registered].filter((r) => !r.split(" ")[1].startsWith("/console"));
      expect(api.filter((r) => !documented().has(r)), "registered but not documented").toEqual([]);
      expect([...documented()].filter((r) => r.split(" ")[1].startsWith("/console")), "console routes documented").toEqual([]);
    });

    it("registers every documented operation", () => {
      const missing = [...documented()].filter((route) => {
        const [method, url] = route.split(" ");
        return !app.hasRoute({ method: method as "GET", url });
      });
      expect(missing, "documented but not registered").toEqual([]);
    });

    it("is a well-formed OpenAPI 3.1 document", () => {
      expect(doc.openapi).toMatch(/^3\.1\./);
      const ids = new Set<string>();
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, o] of Object.entries(item)) {
          expect(METHODS, `${path}: ${method}`).toContain(method);
          expect(ids.has(o.operationId), `duplicate operationId ${o.operationId}`).toBe(false);
          ids.add(o.operationId);
          // Every path parameter is declared, and every /v1 operation needs the key.
          const declared = ((o as { parameters?: Array<{ name: string; in: string }> }).parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
          expect(declared.sort(), `${method} ${path} parameters`).toEqual([...path.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]).sort());
          expect(o.security === undefined, `${method} ${path} security`).toBe(path.startsWith("/v1/"));
          for (const [status, r] of Object.entries(o.responses)) {
            expect(status, `${method} ${path}`).toMatch(/^[1-5]\d\d$/);
            const { response } = resolveResponse(r);
            expect(response.description).toBeTruthy();
            for (const media of Object.values(response.content ?? {})) if (media.schema) validatorFor(media.schema);
          }
          for (const media of Object.values(o.requestBody?.content ?? {})) if (media.schema) validatorFor(media.schema);
        }
      }
      // The broadcast endpoints (their responses are checked in routes/broadcasts.test.ts).
      expect(Object.keys(doc.paths).filter((p) => p.includes("broadcast") && !p.endsWith("/stats")).sort()).toEqual([
        "/v1/broadcasts", "/v1/broadcasts/{id}", "/v1/broadcasts/{id}/ab/winner", "/v1/broadcasts/{id}/cancel", "/v1/broadcasts/{id}/check", "/v1/broadcasts/{id}/schedule", "/v1/broadcasts/{id}/test",
      ]);
    });

    it("is served at GET /openapi.json without a key, naming this gateway", async () => {
      const res = await call("GET /openapi.json");
      expect(res.statusCode).toBe(200);
      const served = res.json() as Document & { servers: Array<{ url: string }> };
      expect(served.paths).toEqual(doc.paths);
      expect(served.servers).toEqual([{ url: loadConfig({}).publicUrl }]);
    });
  });

  describe("emails", () => {
    it("sends raw and templated emails in the documented envelope", async () => {
      const raw = await call("POST /v1/emails", { body: { ...rawEmail, groupBy: "onboarding", settings: { trackOpens: true } } });
      expect(raw.statusCode).toBe(200);
      expect(raw.json().email).toMatchObject({ type: "raw", status: "SENT", groupBy: "onboarding" });
      const templated = await call("POST /v1/emails", { body: templatedEmail });
      expect(templated.statusCode).toBe(200);
      expect(templated.json().email).toMatchObject({ type: "templated", template: "welcome" });
      const scheduled = await call("POST /v1/emails", { body: { ...rawEmail, sendAt: inDays(2) } });
      expect(scheduled.json().email.status).toBe("SCHEDULED");
    });

    it("documents what an email carries: cc, bcc, headers, attachments and tags in the request and every record", async () => {
      const carried = {
        cc: "Cy <cy@example.test>",
        bcc: ["bo@example.test"],
        headers: { "X-Entity-Ref-ID": "inv-1" },
        attachments: [{ filename: "a.pdf", content: Buffer.from("%PDF-1.4").toString("base64"), contentType: "application/pdf" }, { filename: "logo.png", content: "iVBORw0K", contentId: "logo" }],
        tags: [{ name: "category", value: "invoice" }],
      };
      const shown = {
        cc: [carried.cc], bcc: carried.bcc, headers: carried.headers, tags: carried.tags,
        attachments: [{ filename: "a.pdf", contentType: "application/pdf", size: 8 }, expect.objectContaining({ filename: "logo.png", size: 6, contentId: "logo" })],
      };
      const raw = await call("POST /v1/emails", { body: { ...rawEmail, ...carried } });
      expect(raw.statusCode, raw.body).toBe(200);
      expect(raw.json().email).toMatchObject(shown);
      const templated = await call("POST /v1/emails", { body: { ...templatedEmail, ...carried, sendAt: inDays(1) } });
      expect(templated.json().email).toMatchObject(shown);
      const got = await call("GET /v1/emails/{id}", { url: `/v1/emails/${raw.json().email.id}` });
      expect(got.json().email).toMatchObject(shown);
      const batch = await call("POST /v1/emails/batch", { body: { emails: [{ ...rawEmail, ...carried }, { ...templatedEmail, tags: [{ name: "bad tag", value: "x" }] }] } });
      expect(batch.json().emails.successful[0]).toMatchObject(shown);
      expect(batch.json().emails.failed).toEqual([expect.objectContaining({ index: 1, code: "invalid_tags" })]);
      const listed = await call("GET /v1/emails", { url: "/v1/emails?tag=category:invoice&limit=100" });
      expect(listed.json().emails.items.map((e: { id: string }) => e.id)).toContain(raw.json().email.id);
      const stats = await call("GET /v1/stats/emails", { url: "/v1/stats/emails?tag=category:invoice" });
      expect(stats.json().stats.tags).toEqual(["category:invoice"]);
      for (const [extra, code] of [
        [{ headers: { Subject: "x" } }, "header_not_allowed"],
        [{ attachments: [{ filename: "x.exe", content: "TVo=" }] }, "attachment_type_not_allowed"],
        [{ attachments: [{ filename: "x.txt", content: "@@" }] }, "invalid_payload"],
        [{ cc: Array.from({ length: 50 }, (_, i) => `c${i}@example.test`) }, "too_many_recipients"],
        [{ tags: [{ name: "", value: "x" }] }, "invalid_tags"],
      ] as const) {
        const res = await call("POST /v1/emails", { body: { ...rawEmail, ...extra } });
        expect(res.json(), code).toMatchObject({ statusCode: 400, code });
      }
    });

    it("accepts exactly the payloads the document accepts", async () => {
      const accepted: unknown[] = [
        rawEmail,
        { ...rawEmail, fromName: null, text: null, previewText: "Hello", replyTo: "support@acme.test", contactProperties: { plan: "pro" }, settings: null, idempotencyKey: null },
        { ...rawEmail, settings: { trackClicks: false, trackOpens: null }, sendAt: null },
        { template: "welcome", to: "cy@example.test" },
        { ...templatedEmail, variables: null, groupBy: "g1", settings: { trackClicks: true } },
      ];
      for (const body of accepted) {
        const check = requestIsValid("POST /v1/emails", body);
        expect(check.valid, `document refuses ${JSON.stringify(body)}: ${check.errors}`).toBe(true);
        const res = await call("POST /v1/emails", { body });
        expect(res.statusCode, `gateway refuses ${JSON.stringify(body)}: ${res.body}`).toBe(200);
      }
      const refused: unknown[] = [
        {},
        [rawEmail],
        "hello",
        { ...rawEmail, template: "welcome" },
        { to: "ann@example.test", subject: "x" },
        { ...rawEmail, html: "" },
        { ...rawEmail, subject: undefined },
        { ...rawEmail, bogus: "x@example.test" },
        { ...rawEmail, settings: { trackClicks: "yes" } },
        { ...rawEmail, settings: { trackReplies: true } },
        { ...rawEmail, to: 42 },
        { ...templatedEmail, from: "hello@acme.test" },
        { ...templatedEmail, variables: ["a"] },
        { template: "welcome", variables: {} },
      ];
      for (const body of refused) {
        expect(requestIsValid("POST /v1/emails", body).valid, `document accepts ${JSON.stringify(body)}`).toBe(false);
        const res = await call("POST /v1/emails", { body });
        expect(res.statusCode).toBe(400);
        expect(res.json(), JSON.stringify(body)).toEqual({ statusCode: 400, error: "Bad Request", code: "invalid_payload", message: expect.any(String), docsUrl: expect.any(String) });
      }
    });

    it("documents the error bodies of a single send", async () => {
      const from = await call("POST /v1/emails", { body: { ...rawEmail, from: "someone@elsewhere.test" } });
      expect(from.statusCode).toBe(400);
      expect(componentValidator("InvalidFromError")(from.json()), from.body).toBe(true);

      for (const [body, code] of [
        [{ ...rawEmail, sendAt: inDays(120) }, "send_at_out_of_range"],
        [{ ...rawEmail, sendAt: "next tuesday" }, "invalid_send_at"],
        [{ ...templatedEmail, template: "missing" }, "template_not_found"],
        [{ ...rawEmail, subject: "Hi\r\nBcc: victim@example.test" }, "header_injection"],
      ] as const) {
        const res = await call("POST /v1/emails", { body });
        expect(res.json(), JSON.stringify(body)).toMatchObject({ statusCode: 400, code });
      }
      const badJson = await call("POST /v1/emails", { payload: "{not json" });
      expect(badJson.json()).toMatchObject({ statusCode: 400, code: "invalid_json" });

      await call("POST /v1/emails", { body: { ...rawEmail, idempotencyKey: "order-1" } });
      const replay = await call("POST /v1/emails", { body: { ...rawEmail, idempotencyKey: "order-1" } });
      expect(replay.statusCode).toBe(200);
      const reused = await call("POST /v1/emails", { body: { ...rawEmail, subject: "Other", idempotencyKey: "order-1" } });
      expect(reused.json()).toMatchObject({ statusCode: 409, code: "idempotency_key_reused" });

      const { limit } = world.directory;
      world.directory.limit = world.directory.used;
      try {
        const full = await call("POST /v1/emails", { body: rawEmail });
        expect(full.json()).toEqual({
          statusCode: 403, error: "Forbidden", code: "monthly_limit_reached", message: expect.stringContaining("npx mailroom workspace update ws_oa --limit"),
          docsUrl: expect.stringMatching(/\/docs\/errors\/monthly_limit_reached$/),
        });
        const fullBatch = await call("POST /v1/emails/batch", { body: { emails: [rawEmail, templatedEmail] } });
        expect(fullBatch.statusCode).toBe(403);
      } finally {
        world.directory.limit = limit;
      }

      const text = await call("POST /v1/emails", { payload: "hello", contentType: "text/plain" });
      expect(text.statusCode).toBe(415);
      // 5 MB of HTML (UTF-8 bytes) is the most an email may carry.
      const atLimit = await call("POST /v1/emails", { body: { ...rawEmail, html: "é".repeat(2.5 * 1024 * 1024) } });
      expect(atLimit.statusCode, atLimit.body.slice(0, 200)).toBe(200);
      const big = await call("POST /v1/emails", { body: { ...rawEmail, html: "x".repeat(5 * 1024 * 1024 + 1) } });
      expect(big.statusCode).toBe(413);
      expect(big.json()).toMatchObject({ code: "payload_too_large" });
    });

    it("answers keys it does not know with the spec's 401 body", async () => {
      for (const headers of [{ authorization: "" }, { authorization: "Bearer mr_test_unknown_key" }]) {
        const res = await call("POST /v1/emails", { body: rawEmail, headers });
        expect(res.json()).toEqual({ statusCode: 401, error: "Unauthorized", code: "unauthorized", message: expect.any(String), docsUrl: expect.stringMatching(/\/docs\/errors\/unauthorized$/) });
      }
    });

    it("sends a mixed batch: successful items and indexed failures", async () => {
      const body = {
        emails: [
          rawEmail,
          { ...templatedEmail, sendAt: inDays(1) },
          { ...rawEmail, from: "someone@elsewhere.test" },
          { to: "no-form@example.test" },
          { ...templatedEmail, template: "missing" },
        ],
      };
      expect(requestIsValid("POST /v1/emails/batch", { emails: [rawEmail, templatedEmail] }).valid).toBe(true);
      const res = await call("POST /v1/emails/batch", { body });
      expect(res.statusCode).toBe(200);
      const { successful, failed } = res.json().emails;
      expect(successful.map((s: { type: string }) => s.type)).toEqual(["raw", "templated"]);
      expect(failed.map((f: { index: number }) => f.index)).toEqual([2, 3, 4]);
      expect(failed[0]).toMatchObject({ to: "ann@example.test", statusCode: 400, allowedDomains: ["acme.test"] });
      expect(failed[1]).toMatchObject({ to: "no-form@example.test", statusCode: 400, docsUrl: expect.any(String) });
      expect(failed[2]).toMatchObject({ to: "bob@example.test", code: "template_not_found" });

      for (const envelope of [{ emails: [] }, { emails: Array(51).fill(rawEmail) }, { email: rawEmail }, { emails: [rawEmail], dryRun: true }, [rawEmail]]) {
        expect(requestIsValid("POST /v1/emails/batch", envelope).valid, JSON.stringify(envelope).slice(0, 80)).toBe(false);
        const refused = await call("POST /v1/emails/batch", { body: envelope });
        expect(refused.json()).toMatchObject({ statusCode: 400, code: "batch_invalid" });
      }
    });

    it("reads and cancels emails", async () => {
      const scheduled = (await call("POST /v1/emails", { body: { ...templatedEmail, sendAt: inDays(3) } })).json().email;
      const sent = (await call("POST /v1/emails", { body: rawEmail })).json().email;

      const got = await call("GET /v1/emails/{id}", { url: `/v1/emails/${scheduled.id}` });
      expect(got.json().email).toMatchObject({ id: scheduled.id, status: "SCHEDULED", sendAt: expect.any(String), createdAt: expect.any(String) });
      const cancelled = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${scheduled.id}/cancel` });
      expect(cancelled.json().email.status).toBe("CANCELLED");
      const again = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${scheduled.id}/cancel` });
      expect(again.json()).toMatchObject({ statusCode: 409, code: "email_not_cancellable" });
      const notScheduled = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, body: {} });
      expect(notScheduled.statusCode).toBe(409);

      const otherWorkspace = await call("GET /v1/emails/{id}", { url: `/v1/emails/${sent.id}`, headers: KEY_B });
      expect(otherWorkspace.json()).toMatchObject({ statusCode: 404, code: "email_not_found" });
      await call("GET /v1/emails/{id}", { url: "/v1/emails/not-an-id" });
      const missing = await call("POST /v1/emails/{id}/cancel", { url: "/v1/emails/trs_00000000000000000000000000/cancel" });
      expect(missing.statusCode).toBe(404);
      // A bodiless POST that still says application/json is treated as having no body.
      const emptyJson = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, payload: "" });
      expect(emptyJson.json()).toMatchObject({ statusCode: 409, code: "email_not_cancellable" });
      const badJson = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, payload: "{" });
      expect(badJson.json()).toMatchObject({ statusCode: 400, code: "invalid_json" });
      const text = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, payload: "x", contentType: "text/plain" });
      expect(text.statusCode).toBe(415);
      const big = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, body: { pad: "x".repeat(2 * 1024 * 1024) } });
      expect(big.statusCode).toBe(413);
      const bigItem = await call("POST /v1/emails/batch", { body: { emails: [{ ...rawEmail, html: "x".repeat(5 * 1024 * 1024 + 1) }, rawEmail] } });
      expect(bigItem.json().emails.failed).toEqual([expect.objectContaining({ index: 0, statusCode: 413, code: "payload_too_large" })]);
      const bigBatch = await call("POST /v1/emails/batch", { body: { emails: Array.from({ length: 6 }, () => ({ ...rawEmail, html: "x".repeat(4.5 * 1024 * 1024) })) } });
      expect(bigBatch.statusCode).toBe(413);
      expect((await call("POST /v1/emails/batch", { payload: "a", contentType: "text/plain" })).statusCode).toBe(415);
    });

    it("lists and exports the email log", async () => {
      const sent: string[] = [];
      for (let i = 0; i < 3; i++) sent.push((await call("POST /v1/emails", { body: { ...rawEmail, to: `log-${i}@example.test`, groupBy: "log" } })).json().email.id);
      const first = await call("GET /v1/emails", { url: "/v1/emails?limit=2&groupBy=log" });
      expect(first.json().emails).toMatchObject({ hasMore: true, cursor: expect.any(String) });
      const second = await call("GET /v1/emails", { url: `/v1/emails?limit=2&groupBy=log&cursor=${first.json().emails.cursor}` });
      expect(second.json().emails).toMatchObject({ hasMore: false, cursor: null });
      const listed = [...first.json().emails.items, ...second.json().emails.items];
      expect(listed.map((e: { id: string }) => e.id).sort()).toEqual([...sent].sort());
      // Each item is what GET /v1/emails/{id} answers.
      expect(listed[0]).toEqual((await call("GET /v1/emails/{id}", { url: `/v1/emails/${listed[0].id}` })).json().email);
      expect((await call("GET /v1/emails", { url: "/v1/emails?recipient=LOG-1@example.test&status=sent,failed" })).json().emails.items.map((e: { id: string }) => e.id)).toEqual([sent[1]]);
      expect((await call("GET /v1/emails", { url: "/v1/emails?tag=campaign:spring" })).json().emails).toEqual({ items: [], cursor: null, hasMore: false });
      expect((await call("GET /v1/emails", { headers: KEY_B })).json().emails.items).toEqual([]);
      for (const [query, code] of [
        ["limit=0", "invalid_request"], ["limit=abc", "invalid_request"], ["status=SENT,NOPE", "invalid_request"], ["cursor=forged", "invalid_cursor"],
        ["since=yesterday", "invalid_request"], ["since=2030-01-02&until=2030-01-01", "invalid_request"], ["tag=campaign", "invalid_request"], ["nope=1", "invalid_request"],
      ]) {
        expect((await call("GET /v1/emails", { url: `/v1/emails?${query}` })).json(), query).toMatchObject({ statusCode: 400, code });
      }

      const csv = await call("GET /v1/emails/export", { url: "/v1/emails/export?groupBy=log&since=2000-01-01" });
      expect(csv.headers["content-disposition"]).toMatch(/^attachment; filename="emails-/);
      const rows = parseCsv(csv.body, { columns: true }) as Array<Record<string, string>>;
      expect(rows.map((r) => r.id).sort()).toEqual([...sent].sort());
      expect(rows[0]).toMatchObject({ from: rawEmail.from, subject: rawEmail.subject, status: "SENT", groupBy: "log", type: "raw" });
      expect((await call("GET /v1/emails/export", { url: "/v1/emails/export?until=31-01-2030" })).json()).toMatchObject({ statusCode: 400, code: "invalid_request" });
    });

    it("exports and erases one contact", async () => {
      const contact = (await call("POST /v1/contacts", { body: { properties: { email: "erase-me@example.test", plan: "pro" } } })).json().contact;
      const email = (await call("POST /v1/emails", { body: { ...rawEmail, to: "Erase Me <erase-me@example.test>" } })).json().email;
      const exported = await call("GET /v1/contacts/{id}/export", { url: `/v1/contacts/${contact.id}/export` });
      expect(exported.json()).toMatchObject({
        contact: { id: contact.id }, properties: [{ apiSlug: "plan", value: "pro" }], events: [], emails: [{ id: email.id }], suppression: null,
      });
      expect((await call("GET /v1/contacts/{id}/export", { url: `/v1/contacts/${contact.id}/export`, headers: KEY_B })).statusCode).toBe(404);
      expect((await call("DELETE /v1/contacts/{id}", { url: `/v1/contacts/${contact.id}?erase=yes` })).json()).toMatchObject({ statusCode: 400, code: "invalid_request" });
      const erased = await call("DELETE /v1/contacts/{id}", { url: `/v1/contacts/${contact.id}?erase=true` });
      expect(erased.json()).toMatchObject({ isDeleted: true, contact: { id: contact.id }, erased: { emails: 1, events: 0 } });
      expect((await call("GET /v1/emails/{id}", { url: `/v1/emails/${email.id}` })).statusCode).toBe(404);
      await call("POST /v1/contacts", { body: { properties: { email: "erase-too@example.test" } } });
      const byEmail = await call("DELETE /v1/contacts/by-email/{email}", { url: "/v1/contacts/by-email/erase-too%40example.test?erase=true" });
      expect(byEmail.json()).toMatchObject({ isDeleted: true, erased: { emails: 0, events: 0 } });
    });

    it("compares idempotent requests by their parsed form: nulls, key order and spacing do not matter", async () => {
      const body = { ...rawEmail, groupBy: "g1", idempotencyKey: "parsed-1", settings: { trackClicks: true } };
      const first = (await call("POST /v1/emails", { body })).json().email;
      const variants = [
        `{"idempotencyKey":"parsed-1","settings":{"trackClicks":true},"html":"<p>Hi</p>","subject":"Welcome","to":"ann@example.test","from":"Acme <hello@acme.test>","groupBy":"g1"}`,
        JSON.stringify({ ...body, replyTo: null, text: null, sendAt: null, contactProperties: null }, null, 2),
        JSON.stringify({ ...body, settings: { trackClicks: null, trackOpens: false }, replyTo: [] }),
        JSON.stringify({ ...body, settings: undefined }),
      ];
      for (const payload of variants) {
        const again = await call("POST /v1/emails", { payload });
        expect(again.statusCode, payload).toBe(200);
        expect(again.json().email.id).toBe(first.id);
      }
      const absentGroupBy = { ...rawEmail, idempotencyKey: "parsed-2" };
      const second = (await call("POST /v1/emails", { body: absentGroupBy })).json().email;
      expect((await call("POST /v1/emails", { body: { ...absentGroupBy, groupBy: null } })).json().email.id).toBe(second.id);
      for (const changed of [{ ...body, groupBy: "g2" }, { ...body, replyTo: "help@acme.test" }, { ...body, settings: { trackOpens: true } }]) {
        const reused = await call("POST /v1/emails", { body: changed });
        expect(reused.json(), JSON.stringify(changed)).toMatchObject({ statusCode: 409, code: "idempotency_key_reused" });
      }
    });

    it("serves the error documentation docsUrl points at", async () => {
      const index = await call("GET /docs/errors");
      expect(index.headers["content-type"]).toMatch(/^text\/html/);
      expect(index.body).toContain('href="errors/campaigns.invalid_from_email"');
      const refused = await call("POST /v1/emails", { body: { to: "ann@example.test" } });
      const docsUrl = new URL(refused.json().docsUrl);
      expect(docsUrl.pathname).toBe("/docs/errors/invalid_payload");
      const page = await call("GET /docs/errors/{code}", { url: docsUrl.pathname });
      expect(page.body).toContain("HTTP status:</strong> 400 Bad Request");
      const slashed = await call("GET /docs/errors/{code}", { url: "/docs/errors/campaigns.invalid_from_email" });
      expect(slashed.body).toContain("<code>campaigns/invalid_from_email</code>");
      const unknown = await call("GET /docs/errors/{code}", { url: "/docs/errors/no_such_code" });
      expect(unknown.statusCode).toBe(404);
      expect((await call("GET /docs/errors/{code}", { url: "/docs/errors/toString" })).statusCode).toBe(404);
    });

    it("documents the 503 of a service that is down and the 429 of the rate limit", async () => {
      const first = await call("POST /v1/emails", { body: rawEmail }, degraded);
      expect(first.json()).toMatchObject({ statusCode: 503, code: "service_unavailable" });
      await call("POST /v1/emails", { body: rawEmail }, degraded);
      const limited = await call("POST /v1/emails", { body: rawEmail }, degraded);
      expect(limited.statusCode).toBe(429);
      for (const header of ["retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"]) expect(limited.headers[header]).toBeDefined();
    });
  });

  describe("contacts", () => {
    it("upserts, reads, updates, searches, lists and deletes contacts in the official client's shape", async () => {
      const body = { properties: { email: "ann@example.test", firstName: "Ann", timezone: "Asia/Tokyo", plan: "pro", seats: 2 } };
      expect(requestIsValid("POST /v1/contacts", body).valid).toBe(true);
      const created = await call("POST /v1/contacts", { body });
      expect(created.statusCode).toBe(201);
      const ann = created.json().contact;
      expect(ann).toMatchObject({ id: expect.stringMatching(/^ctc_/), workspaceId: "ws_oa", properties: { email: "ann@example.test", firstName: "Ann", status: "SUBSCRIBED", plan: "pro", seats: 2 } });
      const again = await call("POST /v1/contacts", { body: { properties: { email: "ANN@example.test", lastName: "Lee" } } });
      expect(again.statusCode).toBe(200);
      expect(again.json().contact).toMatchObject({ id: ann.id, properties: { firstName: "Ann", lastName: "Lee" } });
      expect((await call("POST /v1/contacts", { body: { properties: { email: "bob@example.test", status: "UNSUBSCRIBED" } } })).statusCode).toBe(201);

      expect((await call("GET /v1/contacts/{id}", { url: `/v1/contacts/${ann.id}` })).json().contact.id).toBe(ann.id);
      const update = { properties: { seats: null, city: "Kyoto" } };
      expect(requestIsValid("PUT /v1/contacts/{id}", update).valid).toBe(true);
      const updated = await call("PUT /v1/contacts/{id}", { url: `/v1/contacts/${ann.id}`, body: update });
      expect(updated.json().contact.properties).toMatchObject({ plan: "pro", city: "Kyoto" });
      expect(updated.json().contact.properties.seats).toBeUndefined();
      expect((await call("GET /v1/contacts/search", { url: "/v1/contacts/search?email=ann%40example.test" })).json().contact.id).toBe(ann.id);
      expect((await call("GET /v1/contacts/search", { url: "/v1/contacts/search?email=nobody%40example.test" })).json()).toEqual({ contact: null });

      const page = await call("GET /v1/contacts", { url: "/v1/contacts?limit=1&includeCount=true" });
      expect(page.json().contacts).toMatchObject({ hasMore: true, cursor: expect.any(String), totalCount: 2 });
      const last = await call("GET /v1/contacts", { url: `/v1/contacts?limit=1&cursor=${page.json().contacts.cursor}&sort=createdAt.desc` });
      expect(last.json().contacts).toMatchObject({ hasMore: false, cursor: null });
      expect((await call("GET /v1/contacts", { url: "/v1/contacts?status=UNSUBSCRIBED&search=bob" })).json().contacts.items).toHaveLength(1);

      const batch = { contacts: [{ properties: { email: "cy@example.test", plan: "team" } }, { properties: { email: "not an address" } }] };
      expect(requestIsValid("POST /v1/contacts/batch", batch).valid).toBe(true);
      const refused = await call("POST /v1/contacts/batch", { url: "/v1/contacts/batch?includeFailedContacts=true", body: batch });
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toMatchObject({ code: "contacts_batch_invalid", errors: [{ index: 1, email: "not an address" }], failedContacts: [{ index: 1, contact: { email: "not an address" } }] });
      const partial = await call("POST /v1/contacts/batch", { url: "/v1/contacts/batch?allowPartialSuccess=true&includeFailedContacts=true", body: batch });
      expect(partial.json()).toMatchObject({ summary: { created: 1, updated: 0, failed: 1, total: 2 }, contacts: [{ properties: { email: "cy@example.test" } }] });

      const events = await call("GET /v1/contacts/{id}/events", { url: `/v1/contacts/${ann.id}/events` });
      expect(events.json().events).toEqual({ items: [], cursor: null, hasMore: false });

      const deleted = await call("DELETE /v1/contacts/{id}", { url: `/v1/contacts/${ann.id}` });
      expect(deleted.json()).toMatchObject({ isDeleted: true, contact: { id: ann.id } });
      const byEmail = await call("DELETE /v1/contacts/by-email/{email}", { url: "/v1/contacts/by-email/bob%40example.test" });
      expect(byEmail.json()).toMatchObject({ isDeleted: true, contact: { properties: { email: "bob@example.test" } } });

      const exported = await call("GET /v1/contacts/export", { url: "/v1/contacts/export?status=SUBSCRIBED" });
      expect(exported.statusCode).toBe(200);
      expect(exported.body.split("\n")[0]).toMatch(/^id,email,firstName,lastName,status,createdAt,updatedAt(,\w+)*$/);
    });

    it("documents the contact errors", async () => {
      const { contact } = (await call("POST /v1/contacts", { body: { properties: { email: "dee@example.test" } } })).json();
      const cases: Array<[string, Call, number, string]> = [
        ["POST /v1/contacts", { body: { properties: { email: "not an email" } } }, 400, "invalid_email"],
        ["POST /v1/contacts", { body: { properties: { email: "x@example.test", colour: "red" } } }, 400, "unknown_contact_property"],
        ["POST /v1/contacts", { body: { email: "x@example.test" } }, 400, "invalid_request"],
        ["POST /v1/contacts", { payload: "x", contentType: "text/plain" }, 415, "unsupported_media_type"],
        ["POST /v1/contacts", { body: { properties: { email: "x@example.test", firstName: "x".repeat(2 * 1024 * 1024) } } }, 413, "payload_too_large"],
        ["POST /v1/contacts/batch", { body: { contacts: [] } }, 400, "invalid_request"],
        ["GET /v1/contacts", { url: "/v1/contacts?limit=1000" }, 400, "invalid_request"],
        ["GET /v1/contacts", { url: "/v1/contacts?cursor=abc" }, 400, "invalid_cursor"],
        ["GET /v1/contacts", { url: "/v1/contacts?filter=x" }, 400, "invalid_filter"],
        ["GET /v1/contacts/export", { url: "/v1/contacts/export?filter=x" }, 400, "invalid_filter"],
        ["GET /v1/contacts/search", { url: "/v1/contacts/search?email=nonsense" }, 400, "invalid_email"],
        ["GET /v1/contacts/{id}", { url: "/v1/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye" }, 404, "contact_not_found"],
        ["GET /v1/contacts/{id}", { url: `/v1/contacts/${contact.id}`, headers: KEY_B }, 404, "contact_not_found"],
        ["PUT /v1/contacts/{id}", { url: `/v1/contacts/${contact.id}`, body: { properties: { email: "new@example.test" } } }, 400, "invalid_contact"],
        ["PUT /v1/contacts/{id}", { url: "/v1/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye", body: { properties: { firstName: "X" } } }, 404, "contact_not_found"],
        ["DELETE /v1/contacts/{id}", { url: "/v1/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye" }, 404, "contact_not_found"],
        ["DELETE /v1/contacts/by-email/{email}", { url: "/v1/contacts/by-email/nobody%40example.test" }, 404, "contact_not_found"],
        ["DELETE /v1/contacts/by-email/{email}", { url: "/v1/contacts/by-email/nonsense" }, 400, "invalid_email"],
        ["GET /v1/contacts/{id}/events", { url: "/v1/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye/events" }, 404, "contact_not_found"],
      ];
      for (const [op, c, status, code] of cases) {
        const res = await call(op, c);
        expect(res.statusCode, `${op} ${JSON.stringify(c).slice(0, 120)}`).toBe(status);
        expect(res.json().code).toBe(code);
      }
      expect(requestIsValid("POST /v1/contacts", { email: "x@example.test" }).valid).toBe(false);
      expect(requestIsValid("PUT /v1/contacts/{id}", { properties: {}, email: "x" }).valid).toBe(false);
    });
  });

  describe("the official client's other resources", () => {
    it("serves contact properties", async () => {
      const created = await call("POST /v1/contact-properties", { body: { displayName: "Tier", type: "SELECT", typeConfig: { options: ["gold", "silver"] } } });
      expect(created.statusCode).toBe(201);
      const tier = created.json().property;
      expect(tier).toMatchObject({ apiSlug: "tier", type: "SELECT", isInternal: false, typeConfig: { multiple: false, options: [{ value: "gold" }, { value: "silver" }] } });
      const renamed = await call("PUT /v1/contact-properties/{id}", { url: `/v1/contact-properties/${tier.id}`, body: { displayName: "Plan tier" } });
      expect(renamed.json().property).toMatchObject({ id: tier.id, displayName: "Plan tier" });
      const custom = await call("GET /v1/contacts/properties", { url: "/v1/contacts/properties?type=CUSTOM&limit=50" });
      expect(custom.json().properties.items.map((p: { apiSlug: string }) => p.apiSlug)).toEqual(expect.arrayContaining(["plan", "seats", "tier"]));
      const internal = await call("GET /v1/contacts/properties", { url: "/v1/contacts/properties?type=INTERNAL&limit=2" });
      expect(internal.json().properties).toMatchObject({ hasMore: true, items: [{ apiSlug: "firstName", isInternal: true }, { apiSlug: "lastName" }] });
      const cases: Array<[string, Call, number, string]> = [
        ["GET /v1/contacts/properties", { url: "/v1/contacts/properties?type=SOME" }, 400, "invalid_request"],
        ["POST /v1/contact-properties", { body: { displayName: "Empty", type: "SELECT" } }, 400, "invalid_property"],
        ["PUT /v1/contact-properties/{id}", { url: "/v1/contact-properties/email", body: { displayName: "x" } }, 400, "invalid_property"],
        ["PUT /v1/contact-properties/{id}", { url: `/v1/contact-properties/${tier.id}`, body: { displayName: "x" }, headers: KEY_B }, 404, "property_not_found"],
      ];
      for (const [op, c, status, code] of cases) {
        const res = await call(op, c);
        expect(res.statusCode, `${op} ${JSON.stringify(c).slice(0, 120)}`).toBe(status);
        expect(res.json().code).toBe(code);
      }
    });

    it("serves templates as transactional emails, and the identities", async () => {
      const made = await call("POST /v1/templates", { body: { name: "tx-receipt", subject: "Receipt {{orderId}}", html: "<p>{{orderId}}</p>" } });
      const list = await call("GET /v1/transactional", { url: "/v1/transactional?limit=100&sort=createdAt.desc&status=ACTIVE" });
      expect(list.json().transactional.items).toContainEqual(expect.objectContaining({ name: "tx-receipt", status: "ACTIVE", variables: { orderId: { id: "orderId", defaultValue: "" } } }));
      const one = await call("GET /v1/transactional/{id}", { url: `/v1/transactional/${made.json().template.id}` });
      expect(one.json().transactional).toMatchObject({ name: "tx-receipt", displayName: "tx-receipt", bodyHtml: "<p>{{orderId}}</p>" });
      expect((await call("GET /v1/transactional", { url: "/v1/transactional?cursor=abc" })).statusCode).toBe(400);
      expect((await call("GET /v1/transactional/{id}", { url: `/v1/transactional/${made.json().template.id}`, headers: KEY_B })).statusCode).toBe(404);
      expect((await call("GET /v1/identities")).json()).toEqual({ identities: { emails: [], domains: [] } });
    });

    it("serves the calling key and the keys of its own workspace", async () => {
      expect((await call("GET /v1/api-keys/check")).json()).toEqual({ status: "SUCCEED", displayName: "bootstrap", role: "EDITOR" });
      expect((await call("GET /v1/api-keys/current")).json().apiKey).toMatchObject({ displayName: "bootstrap", role: "EDITOR", status: "ACTIVE", workspaceId: "ws_oa" });
      const created = await call("POST /v1/workspaces/{workspaceId}/api-keys", { url: "/v1/workspaces/ws_oa/api-keys", body: { displayName: "viewer", role: "VIEWER" } });
      expect(created.statusCode).toBe(201);
      const key = created.json().apiKey;
      expect(key.secretKey).toMatch(/^mr_live_/);
      const listed = await call("GET /v1/workspaces/{workspaceId}/api-keys", { url: "/v1/workspaces/ws_oa/api-keys?limit=1&sort=createdAt.desc" });
      expect(listed.json().apiKeys).toMatchObject({ hasMore: true, startAt: expect.any(String), items: [{ id: key.id }] });
      expect(listed.json().apiKeys.items[0].secretKey).toBeUndefined();
      const renamed = await call("POST /v1/workspaces/{workspaceId}/api-keys/{apiKeyId}", { url: `/v1/workspaces/ws_oa/api-keys/${key.id}`, body: { displayName: "reader" } });
      expect(renamed.json().apiKey).toMatchObject({ displayName: "reader", role: "VIEWER" });
      const revoked = await call("DELETE /v1/workspaces/{workspaceId}/api-keys/{apiKeyId}", { url: `/v1/workspaces/ws_oa/api-keys/${key.id}` });
      expect(revoked.json()).toMatchObject({ isDeleted: true, apiKey: { status: "ARCHIVED" } });
      const cases: Array<[string, Call, number, string]> = [
        ["GET /v1/workspaces/{workspaceId}/api-keys", { url: "/v1/workspaces/ws_ob/api-keys" }, 404, "not_found"],
        ["GET /v1/workspaces/{workspaceId}/api-keys", { url: "/v1/workspaces/ws_oa/api-keys?startAt=yesterday" }, 400, "invalid_request"],
        ["POST /v1/workspaces/{workspaceId}/api-keys", { url: "/v1/workspaces/ws_ob/api-keys", body: { displayName: "x", role: "EDITOR" } }, 404, "not_found"],
        ["POST /v1/workspaces/{workspaceId}/api-keys", { url: "/v1/workspaces/ws_oa/api-keys", body: { displayName: "x", role: "OWNER" } }, 400, "invalid_request"],
        ["POST /v1/workspaces/{workspaceId}/api-keys/{apiKeyId}", { url: `/v1/workspaces/ws_oa/api-keys/${key.id}`, body: { role: "EDITOR" } }, 409, "api_key_revoked"],
        ["POST /v1/workspaces/{workspaceId}/api-keys/{apiKeyId}", { url: "/v1/workspaces/ws_oa/api-keys/key_nope", body: { role: "EDITOR" } }, 404, "api_key_not_found"],
        ["POST /v1/workspaces/{workspaceId}/api-keys/{apiKeyId}", { url: `/v1/workspaces/ws_oa/api-keys/${key.id}`, body: { role: 1 } }, 400, "invalid_request"],
        ["DELETE /v1/workspaces/{workspaceId}/api-keys/{apiKeyId}", { url: `/v1/workspaces/ws_ob/api-keys/${key.id}` }, 404, "not_found"],
      ];
      for (const [op, c, status, code] of cases) {
        const res = await call(op, c);
        expect(res.statusCode, `${op} ${JSON.stringify(c).slice(0, 120)}`).toBe(status);
        expect(res.json().code).toBe(code);
      }
    });

    it("records events", async () => {
      const one = await call("POST /v1/events", { body: { event: "user.signup", identify: { email: "eve@example.test", traits: { firstName: "Eve" } }, messageId: "oa-1" } });
      expect(one.json()).toEqual({ success: true, messageId: "oa-1" });
      const batch = await call("POST /v1/events/batch", {
        body: { events: [{ event: "user.signup", identify: { email: "eve@example.test" }, messageId: "oa-1" }, { event: "bad name", identify: { email: "eve@example.test" } }, { event: "x" }] },
      });
      expect(batch.json()).toMatchObject({ accepted: 0, failed: 2, duplicated: 1, events: [{ index: 0, status: "duplicate" }], errors: [{ index: 1 }, { index: 2 }] });
      expect((await call("POST /v1/events", { body: { event: "bad name", identify: { email: "eve@example.test" } } })).json().code).toBe("invalid_event");
      expect((await call("POST /v1/events/batch", { body: { events: [] } })).json().code).toBe("invalid_request");
      // Event data nested past protobuf's recursion limit is refused at the door (it was a 500).
      let deep: Record<string, unknown> = { leaf: 1 };
      for (let i = 0; i < 40; i++) deep = { a: [deep] };
      const nested = await call("POST /v1/events", { body: { event: "deep", identify: { email: "eve@example.test" }, properties: deep } });
      expect(nested.statusCode).toBe(400);
      expect(nested.json()).toMatchObject({ code: "invalid_request", message: expect.stringContaining("nest deeper") });
    });
  });

  describe("templates", () => {
    it("creates, reads, replaces, lists and deletes templates", async () => {
      const body = { name: "receipt", subject: "Receipt for {{firstName}}", html: "<p>{{plan}}</p>" };
      expect(requestIsValid("POST /v1/templates", body).valid).toBe(true);
      const created = await call("POST /v1/templates", { body });
      expect(created.statusCode).toBe(201);
      expect(created.json().template.variables).toEqual(["firstName", "plan"]);
      await call("POST /v1/templates", { body: { ...body, name: "digest", text: "plain", previewText: null } });
      expect((await call("GET /v1/templates/{name}", { url: "/v1/templates/receipt" })).json().template.text).toBeNull();
      const replace = { subject: "New", html: "<p>new</p>", text: "new", previewText: "Preview" };
      expect(requestIsValid("PUT /v1/templates/{name}", replace).valid).toBe(true);
      const replaced = await call("PUT /v1/templates/{name}", { url: "/v1/templates/receipt", body: replace });
      expect(replaced.json().template).toMatchObject({ text: "new", previewText: "Preview" });
      const page = await call("GET /v1/templates", { url: "/v1/templates?limit=1" });
      expect(page.json().templates).toMatchObject({ hasMore: true });
      expect(page.json().templates.items[0]).not.toHaveProperty("html");
      const deleted = await call("DELETE /v1/templates/{name}", { url: "/v1/templates/digest" });
      expect(deleted.json()).toEqual({ deleted: true, name: "digest" });
    });

    it("renders a Liquid template and keeps and restores its versions", async () => {
      const body = { name: "liquid-order", subject: "Order {{ order.id }}", html: "<p>{% for i in order.items %}{{ i | upcase }}{% endfor %}</p>" };
      expect((await call("POST /v1/templates", { body })).json().template).toMatchObject({ kind: "template", format: "liquid", layout: null, version: 1, source: null });
      const render = (name: string, b: unknown) => call("POST /v1/templates/{name}/render", { url: `/v1/templates/${name}/render`, body: b });
      const rendered = await render("liquid-order", { variables: { order: { id: "A1", items: ["x", "y"] } } });
      expect(rendered.statusCode).toBe(200);
      expect(rendered.json()).toEqual({ subject: "Order A1", html: "<p>XY</p>", text: "XY", previewText: "" });
      const tooLong = await render("liquid-order", { variables: { order: { items: Array.from({ length: 1_001 }, () => "i") } } });
      expect([tooLong.statusCode, tooLong.json().code]).toEqual([400, "template_render_failed"]);
      expect((await render("nope", {})).statusCode).toBe(404);
      await call("PUT /v1/templates/{name}", { url: "/v1/templates/liquid-order", body: { subject: "Two", html: "<p>2</p>" } });
      const versions = await call("GET /v1/templates/{name}/versions", { url: "/v1/templates/liquid-order/versions" });
      expect(versions.json().versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);
      expect((await call("GET /v1/templates/{name}/versions", { url: "/v1/templates/nope/versions" })).statusCode).toBe(404);
      const restore = (v: string) => call("POST /v1/templates/{name}/versions/{version}/restore", { url: `/v1/templates/liquid-order/versions/${v}/restore` });
      expect((await restore("1")).json().template).toMatchObject({ version: 3, subject: "Order {{ order.id }}" });
      expect((await restore("9")).statusCode).toBe(404);
      // A version that cannot exist by its name is not found, like an unknown one.
      expect((await restore("x")).statusCode).toBe(404);
      // An old version whose layout is gone no longer passes: 400 invalid_template.
      await call("POST /v1/templates", { body: { name: "shell", kind: "layout", subject: "-", html: "<div>{{ content }}</div>" } });
      await call("POST /v1/templates", { body: { name: "framed", subject: "F", html: "<p>f</p>", layout: "shell" } });
      await call("PUT /v1/templates/{name}", { url: "/v1/templates/framed", body: { subject: "F2", html: "<p>f2</p>" } });
      expect((await call("DELETE /v1/templates/{name}", { url: "/v1/templates/shell" })).statusCode).toBe(200);
      const stale = await call("POST /v1/templates/{name}/versions/{version}/restore", { url: "/v1/templates/framed/versions/1/restore" });
      expect([stale.statusCode, stale.json().code]).toEqual([400, "invalid_template"]);
    });

    it("checks a template rendered with sample values, with or without a body; 404 for an unknown one", async () => {
      const body = { name: "check-welcome", subject: "Welcome {{ firstName }}", html: '<p>Hi {{ firstName }}, your plan is {{ plan }}.</p><p><img src="https://acme.test/logo.png"></p>' };
      const created = await call("POST /v1/templates", { body });
      expect(created.statusCode, created.body).toBe(201);
      const check = (name: string, b: unknown) => call("POST /v1/templates/{name}/check", { url: `/v1/templates/${name}/check`, body: b });
      const checked = await check("check-welcome", { variables: { firstName: "Ann" } });
      expect(checked.statusCode).toBe(200);
      expect(checked.json().check).toMatchObject({ spam: { skipped: "no spam filter in this test" }, images: [{ src: "https://acme.test/logo.png", alt: null }], unsubscribe: { required: false, found: false }, errors: [] });
      expect(checked.json().check.warnings).toContainEqual(expect.objectContaining({ level: "warning", code: "image_missing_alt", where: "https://acme.test/logo.png" }));
      expect([(await check("nope", {})).statusCode]).toEqual([404]);
      // No body at all: sample values only.
      expect((await call("POST /v1/templates/{name}/check", { url: "/v1/templates/check-welcome/check" })).json().check.images).toHaveLength(1);
      const bad = await check("check-welcome", { variables: [1] });
      expect([bad.statusCode, bad.json().code]).toEqual([400, "invalid_request"]);
    });

    it("renders unsaved content (the editor's live preview) without saving it", async () => {
      const draft = (b: unknown) => call("POST /v1/templates/render", { body: b });
      const rendered = await draft({ subject: "Hi {{ n | default: 'you' }}", html: "<p>{% for i in xs %}{{ i }}{% endfor %}</p>", variables: { xs: [1, 2] } });
      expect([rendered.statusCode, rendered.json()]).toEqual([200, { subject: "Hi you", html: "<p>12</p>", text: "12", previewText: "" }]);
      const bad = await draft({ subject: "s", html: "<p>\n {% if x %}" });
      expect([bad.statusCode, bad.json().code, bad.json().line, bad.json().column]).toEqual([400, "invalid_template", 2, 2]);
      expect((await draft({ name: "nope", subject: "s", html: "h" })).statusCode).toBe(404);
      expect((await call("GET /v1/templates/{name}", { url: "/v1/templates/render" })).statusCode).toBe(404);
    });

    it("keeps a snippet another template renders: 409 template_in_use naming it", async () => {
      await call("POST /v1/templates", { body: { name: "sig", kind: "snippet", subject: "", html: "<p>sig</p>" } });
      await call("POST /v1/templates", { body: { name: "signed", subject: "s", html: '<p>x</p>{% render "sig" %}' } });
      const refused = await call("DELETE /v1/templates/{name}", { url: "/v1/templates/sig" });
      expect([refused.statusCode, refused.json().code, refused.json().usedBy]).toEqual([409, "template_in_use", ["signed"]]);
      expect((await call("DELETE /v1/templates/{name}", { url: "/v1/templates/signed" })).statusCode).toBe(200);
      expect((await call("DELETE /v1/templates/{name}", { url: "/v1/templates/sig" })).statusCode).toBe(200);
    });

    it("documents the template errors", async () => {
      const cases: Array<[string, Call, number, string]> = [
        ["POST /v1/templates", { body: { name: "receipt", subject: "x", html: "x" } }, 409, "template_exists"],
        ["POST /v1/templates", { body: { name: "bad name!", subject: "x", html: "x" } }, 400, "invalid_template_name"],
        ["POST /v1/templates", { body: { name: "big", subject: "x", html: "x".repeat(600 * 1024) } }, 413, "template_html_too_large"],
        ["POST /v1/templates", { payload: "x", contentType: "text/plain" }, 415, "unsupported_media_type"],
        ["GET /v1/templates", { url: "/v1/templates?sort=name" }, 400, "invalid_request"],
        ["GET /v1/templates", { url: "/v1/templates?cursor=abc" }, 400, "invalid_cursor"],
        ["GET /v1/templates/{name}", { url: "/v1/templates/nothing" }, 404, "not_found"],
        ["GET /v1/templates/{name}", { url: "/v1/templates/receipt", headers: KEY_B }, 404, "not_found"],
        ["PUT /v1/templates/{name}", { url: "/v1/templates/receipt", body: { name: "renamed", subject: "x", html: "x" } }, 400, "invalid_request"],
        ["PUT /v1/templates/{name}", { url: "/v1/templates/nothing", body: { subject: "x", html: "x" } }, 404, "not_found"],
        ["PUT /v1/templates/{name}", { url: "/v1/templates/receipt", body: { subject: "x", html: "x".repeat(600 * 1024) } }, 413, "template_html_too_large"],
        ["PUT /v1/templates/{name}", { url: "/v1/templates/receipt", payload: "x", contentType: "text/plain" }, 415, "unsupported_media_type"],
        ["DELETE /v1/templates/{name}", { url: "/v1/templates/nothing" }, 404, "not_found"],
      ];
      for (const [op, c, status, code] of cases) {
        const res = await call(op, c);
        expect(res.statusCode, `${op} ${JSON.stringify(c).slice(0, 120)}`).toBe(status);
        expect(res.json().code).toBe(code);
      }
      expect(requestIsValid("POST /v1/templates", { name: "x", subject: "x" }).valid).toBe(false);
    });
  });

  describe("recipient links, health and development routes", () => {
    it("serves the open pixel, click redirect and unsubscribe as documented", async () => {
      expect((await call("GET /t/o/{token}", { url: `/t/o/${recipientToken}` })).statusCode).toBe(200);
      expect((await call("GET /t/o/{token}", { url: "/t/o/forged" })).statusCode).toBe(404);
      const click = await call("GET /t/c/{link}/{token}", { url: `/t/c/${linkToken}/${recipientToken}` });
      expect(click.headers.location).toBe("https://acme.test/pricing?plan=pro");
      expect((await call("GET /t/c/{link}/{token}", { url: `/t/c/${linkToken}/forged` })).statusCode).toBe(404);
      expect((await call("GET /u/{token}", { url: `/u/${recipientToken}?manage=1` })).statusCode).toBe(200);
      expect((await call("GET /u/{token}", { url: "/u/forged" })).statusCode).toBe(404);
      const oneClick = await call("POST /u/{token}", { url: `/u/${recipientToken}`, payload: "List-Unsubscribe=One-Click", contentType: "application/x-www-form-urlencoded" });
      expect(oneClick.json()).toEqual({ unsubscribed: true });
      const button = await call("POST /u/{token}", { url: `/u/${recipientToken}`, headers: { accept: "text/html" } });
      expect(button.headers["content-type"]).toMatch(/^text\/html/);
      expect((await call("POST /u/{token}", { url: "/u/forged" })).statusCode).toBe(404);
      expect(events.length).toBeGreaterThanOrEqual(3);

      const resubscribe = `/u/${recipientToken}/resubscribe`;
      expect((await call("POST /u/{token}/resubscribe", { url: resubscribe, headers: { origin: "https://evil.test" } })).statusCode).toBe(403);
      const page = await call("POST /u/{token}/resubscribe", { url: resubscribe, headers: { accept: "text/html" } });
      expect(page.headers["content-type"]).toMatch(/^text\/html/);
      expect((await call("POST /u/{token}/resubscribe", { url: resubscribe })).json()).toEqual({ subscribed: true });
      expect((await call("POST /u/{token}/resubscribe", { url: "/u/forged/resubscribe" })).statusCode).toBe(404);
      await directoryClient.addSuppression({ workspaceId: "ws_oa", email: recipient.email, reason: SuppressionReason.HARD_BOUNCE }, TEST_CALL);
      expect((await call("POST /u/{token}/resubscribe", { url: resubscribe })).json()).toMatchObject({ statusCode: 409, code: "conflict" });
      await directoryClient.removeSuppression({ workspaceId: "ws_oa", email: recipient.email }, TEST_CALL);
    });

    it("serves health and the captured-mail pages", async () => {
      expect((await call("GET /healthz")).json()).toEqual({ ok: true });
      const inbox = await call("GET /dev/mail");
      expect(inbox.body).toContain("cap_1");
      expect((await call("GET /dev/mail/{id}", { url: "/dev/mail/cap_1" })).statusCode).toBe(200);
      expect((await call("GET /dev/mail/{id}", { url: "/dev/mail/cap_9" })).statusCode).toBe(404);
      expect((await call("GET /dev/mail/{id}", { url: "/dev/mail/bad%20id" })).statusCode).toBe(400);
      expect((await call("GET /dev/mail/{id}/raw", { url: "/dev/mail/cap_1/raw" })).body).toContain("Subject: Hello");
      expect((await call("GET /dev/mail/{id}/raw", { url: "/dev/mail/cap_9/raw" })).statusCode).toBe(404);
      expect((await call("GET /dev/mail/{id}/raw", { url: "/dev/mail/bad%20id/raw" })).statusCode).toBe(400);
    });

    it("receives webhooks at /dev/webhooks/<name> and lists them, newest first", async () => {
      expect((await call("GET /dev/webhooks")).body).toContain("Nothing received yet");
      const body = JSON.stringify({ type: "EMAIL_DELIVERED", timestamp: "2030-01-01T00:00:00.000Z", data: { subject: "<b>hi</b>" } });
      const got = await call("POST /dev/webhooks/{name}", { url: "/dev/webhooks/readme", payload: body, contentType: "application/json",
        headers: { "webhook-id": "msg_1", "webhook-signature": "v1,abc" } });
      expect(got.statusCode).toBe(204);
      await call("POST /dev/webhooks/{name}", { url: "/dev/webhooks/other", payload: "not json", contentType: "text/plain" });
      const list = (await call("GET /dev/webhooks")).body;
      expect(list.indexOf("(no event type)")).toBeLessThan(list.indexOf("EMAIL_DELIVERED"));
      expect(list).toContain("webhook-id: msg_1");
      expect(list).toContain("webhook-signature: v1,abc");
      expect(list).toContain("&#60;b&#62;hi&#60;/b&#62;");
      expect(list).not.toContain("<b>hi</b>");
      expect((await app.inject({ method: "POST", url: "/dev/webhooks/bad%20name", payload: "{}" })).statusCode).toBe(400);
    });

    it("searches and pages the captured mail, and clears it only with the page's token", async () => {
      capturedQueries.length = 0;
      const first = await call("GET /dev/mail", { url: "/dev/mail?q=%20Hello%20" });
      expect(capturedQueries.at(-1)).toEqual({ query: "Hello", cursor: "", limit: 50 });
      expect(first.body).toContain('value="Hello"');
      expect(first.body).toContain('href="/dev/mail?q=Hello&#38;cursor=cap_1"');
      const older = await call("GET /dev/mail", { url: "/dev/mail?q=Hello&cursor=cap_1" });
      expect(capturedQueries.at(-1)).toEqual({ query: "Hello", cursor: "cap_1", limit: 50 });
      expect(older.body).not.toContain("Older messages");
      expect((await call("GET /dev/mail", { url: "/dev/mail?cursor=..%2Fx" })).statusCode).toBe(400);
      expect((await call("GET /dev/mail", { url: `/dev/mail?q=${"x".repeat(201)}` })).statusCode).toBe(400);

      // The Clear form: its token is bound to the cookie the page set.
      const cookie = /mr_dev_mail=([^;]+)/.exec(String(first.headers["set-cookie"]))![1];
      const token = /name="_csrf" value="([^"]+)"/.exec(first.body)![1];
      const form = (t: string) => `_csrf=${encodeURIComponent(t)}`;
      const clear = (c: Call) => call("POST /dev/mail/clear", { contentType: "application/x-www-form-urlencoded", ...c });
      const before = capturedCleared;
      expect((await clear({ payload: form(token) })).statusCode).toBe(403);
      expect((await call("POST /dev/mail/clear", { headers: { cookie: `mr_dev_mail=${cookie}` } })).statusCode).toBe(403);
      expect((await clear({ payload: form("forged"), headers: { cookie: `mr_dev_mail=${cookie}` } })).statusCode).toBe(403);
      expect((await clear({ payload: form(token), headers: { cookie: `mr_dev_mail=${cookie}`, origin: "https://evil.test" } })).statusCode).toBe(403);
      expect((await clear({ payload: form(token), headers: { cookie: `mr_dev_mail=${cookie}`, "sec-fetch-site": "cross-site" } })).statusCode).toBe(403);
      expect(capturedCleared).toBe(before);
      const done = await clear({ payload: form(token), headers: { cookie: `other=1; mr_dev_mail=${cookie}`, "sec-fetch-site": "same-origin" } });
      expect(done.statusCode).toBe(303);
      expect(done.headers.location).toBe("/dev/mail");
      expect(capturedCleared).toBe(before + 1);
    });
  });

  it("serves metrics (behind MAILROOM_METRICS_TOKEN when set) and readiness", async () => {
    // Stand-ins for the services the gateway's /readyz asks: one answering, one port nothing listens on.
    const healthy = http.createServer((_req, res) => res.end('{"ok":true}'));
    await new Promise<void>((resolve) => healthy.listen(0, "127.0.0.1", resolve));
    const up = `http://127.0.0.1:${(healthy.address() as AddressInfo).port}`;
    const base = loadConfig({});
    const gatewayWith = (urls: string, metricsToken?: string) =>
      buildGateway({
        config: { ...base, secret: SECRET, metricsToken, urls: Object.fromEntries(Object.keys(base.urls).map((name) => [name, urls])) as typeof base.urls },
        logger: createLogger("gateway-openapi-test", "silent"),
        clients: {} as ServiceClients,
        rateLimitPerMinute: 0,
        authCacheMs: 0,
      });
    const operated = await gatewayWith(up, "scrape-token");
    const unready = await gatewayWith("http://127.0.0.1:1");
    try {
      expect((await call("GET /metrics", {}, unready)).body).toContain("mailroom_http_requests_total");
      expect((await call("GET /metrics", {}, operated)).statusCode).toBe(401);
      expect((await call("GET /metrics", { headers: { authorization: "Bearer scrape-token" } }, operated)).body).toContain("process_cpu_seconds_total");
      expect((await call("GET /readyz", {}, operated)).json()).toMatchObject({ ok: true, checks: { directory: "ok", email: "ok" } });
      const down = await call("GET /readyz", {}, unready);
      expect(down.statusCode).toBe(503);
      expect(down.json().checks.directory).toMatch(/unreachable/);
    } finally {
      await Promise.all([operated.close(), unready.close()]);
      healthy.close();
    }
  });

  describe("outcomes, stats and webhooks", () => {
    it("shows an email's outcomes and the stats of transactional emails", async () => {
      const sent = (await call("POST /v1/emails", { body: { ...rawEmail, groupBy: "receipts" } })).json().email;
      const now = world.clock.now();
      const { recordEvent } = await import("../../services/email/src/domain/outcomes.js");
      await recordEvent(world.outcomeDeps, { eventId: "oa_1", emailId: sent.id, kind: "sent", at: now });
      await recordEvent(world.outcomeDeps, { eventId: "oa_2", emailId: sent.id, kind: "opened", at: now });
      await recordEvent(world.outcomeDeps, { eventId: "oa_3", emailId: sent.id, kind: "clicked", at: now, url: "https://acme.test/x" });
      const got = await call("GET /v1/emails/{id}", { url: `/v1/emails/${sent.id}` });
      expect(got.json().email).toMatchObject({ status: "DELIVERED", opens: 1, clicks: 1, links: [{ url: "https://acme.test/x", clicks: 1 }], lastEvent: { type: "CLICKED" } });

      const stats = await call("GET /v1/stats/emails", { url: "/v1/stats/emails?groupBy=receipts" });
      expect(stats.statusCode).toBe(200);
      expect(stats.json().stats.totals).toMatchObject({ sent: 1, delivered: 1, opened: 1, clicked: 1, rates: { opened: 1, clicked: 1 } });
      expect(stats.json().stats.groups).toEqual([expect.objectContaining({ groupBy: "receipts", sent: 1 })]);
      const backwards = await call("GET /v1/stats/emails", { url: "/v1/stats/emails?from=2030-02-01&to=2030-01-01" });
      expect(backwards.statusCode).toBe(400);
    });

    it("shows a broadcast's counters and rates, 404 for another workspace's", async () => {
      const stats = await call("GET /v1/broadcasts/{id}/stats", { url: "/v1/broadcasts/cmp_known/stats" });
      expect(stats.json().stats).toMatchObject({ broadcastId: "cmp_known", status: "IN_PROGRESS", sent: 8, opened: 4, rates: { opened: 0.5, clicked: 0.25 } });
      expect((await call("GET /v1/broadcasts/{id}/stats", { url: "/v1/broadcasts/cmp_known/stats", headers: KEY_B })).statusCode).toBe(404);
      expect((await call("GET /v1/broadcasts/{id}/stats", { url: "/v1/broadcasts/cmp_addon/stats" })).statusCode).toBe(402);
      expect((await call("GET /v1/broadcasts/{id}/stats", { url: "/v1/broadcasts/cmp_not_enabled/stats" })).statusCode).toBe(403);
    });

    it("manages webhooks as the official client does, with Mailroom's delivery routes", async () => {
      const created = await call("POST /v1/webhooks", { body: { url: "https://hooks.acme.test/in", events: ["EMAIL_SENT", "EMAIL_OPENED"], token: "s3cret" } });
      expect(created.statusCode).toBe(200);
      const webhook = created.json().webhook;
      expect(webhook).toMatchObject({ url: "https://hooks.acme.test/in", events: ["EMAIL_SENT", "EMAIL_OPENED"], status: "ACTIVE", token: "s3cret", workspaceId: "ws_oa" });
      const bad = await call("POST /v1/webhooks", { body: { url: "https://hooks.acme.test/in", events: ["NOPE"] } });
      expect(bad.json()).toMatchObject({ statusCode: 400, code: "invalid_payload" });
      const item = `/v1/webhooks/${webhook.id}`;

      expect((await call("GET /v1/webhooks")).json().webhooks).toEqual([
        { id: webhook.id, url: webhook.url, events: webhook.events, status: "ACTIVE", description: "hooks.acme.test", createdAt: webhook.createdAt },
      ]);
      expect((await call("GET /v1/webhooks/{id}", { url: item })).json().webhook).toEqual(webhook);
      expect((await call("GET /v1/webhooks/{id}", { url: item, headers: KEY_B })).statusCode).toBe(404);

      const test = await call("POST /v1/webhooks/{id}/test", { url: `${item}/test` });
      expect(test.json().delivery).toMatchObject({ webhookId: webhook.id, eventType: "TESTING_CONNECTION", state: "PENDING" });
      expect((await call("POST /v1/webhooks/{id}/test", { url: `${item}/test`, headers: KEY_B })).statusCode).toBe(404);
      const deliveries = await call("GET /v1/webhooks/{id}/deliveries", { url: `${item}/deliveries` });
      expect(deliveries.json().deliveries.map((d: { id: string }) => d.id)).toEqual([test.json().delivery.id]);
      expect((await call("GET /v1/webhooks/{id}/deliveries", { url: `${item}/deliveries?limit=0` })).statusCode).toBe(400);
      expect((await call("GET /v1/webhooks/{id}/deliveries", { url: `${item}/deliveries`, headers: KEY_B })).statusCode).toBe(404);
      const redeliverUrl = `${item}/deliveries/${test.json().delivery.id}/redeliver`;
      expect((await call("POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver", { url: redeliverUrl })).json().delivery.id).toBe(test.json().delivery.id);
      expect((await call("POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver", { url: `${item}/deliveries/whd_none/redeliver` })).json().code).toBe("delivery_not_found");

      const paused = await call("POST /v1/webhooks/{id}", { url: item, body: { status: "PAUSED", events: ["EMAIL_CLICKED"] } });
      expect(paused.json().webhook).toMatchObject({ status: "PAUSED", events: ["EMAIL_CLICKED"] });
      expect((await call("POST /v1/webhooks/{id}/test", { url: `${item}/test` })).json().code).toBe("webhook_not_active");
      expect((await call("POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver", { url: redeliverUrl })).json().code).toBe("webhook_not_active");
      expect((await call("POST /v1/webhooks/{id}", { url: item, body: { status: "BANNED" } })).statusCode).toBe(400);
      expect((await call("POST /v1/webhooks/{id}", { url: item, body: { status: "ACTIVE" }, headers: KEY_B })).statusCode).toBe(404);

      const deleted = await call("DELETE /v1/webhooks/{id}", { url: item });
      expect(deleted.json()).toMatchObject({ isDeleted: true, webhook: { id: webhook.id } });
      expect((await call("DELETE /v1/webhooks/{id}", { url: item })).statusCode).toBe(404);
    });
  });

  describe("segments", () => {
    it("creates, reads, changes, lists, counts, lists the contacts of and deletes segments; invalid filters name their path", async () => {
      for (const [email, plan] of [["seg1@example.test", "pro"], ["seg2@example.test", "pro"], ["seg3@example.test", "free"]]) {
        expect((await call("POST /v1/contacts", { body: { properties: { email, plan } } })).statusCode).toBeLessThan(300);
      }
      const created = await call("POST /v1/segments", { body: { name: "Pro", filter: { "properties.plan": "pro" } } });
      expect(created.statusCode).toBe(201);
      const id = created.json().segment.id;
      expect(created.json().segment).toMatchObject({ id: expect.stringMatching(/^seg_/), name: "Pro", filter: { "properties.plan": "pro" } });
      const bad = await call("POST /v1/segments", { body: { name: "Bad", filter: { $and: [{ "properties.nope": 1 }] } } });
      expect(bad.json()).toMatchObject({ statusCode: 400, code: "invalid_filter", message: expect.stringContaining("filter.$and[0]") });
      expect((await call("POST /v1/segments", { body: { name: "No filter" } })).statusCode).toBe(400);
      expect((await call("POST /v1/segments", { body: { name: "Second", filter: { "properties.plan": "free" } } })).statusCode).toBe(201);
      expect((await call("GET /v1/segments/{id}", { url: `/v1/segments/${id}` })).json().segment).toEqual(created.json().segment);
      expect((await call("GET /v1/segments/{id}", { url: `/v1/segments/${id}`, headers: KEY_B })).json().code).toBe("segment_not_found");
      expect((await call("PATCH /v1/segments/{id}", { url: `/v1/segments/${id}`, body: { name: "Pro plan" } })).json().segment).toMatchObject({ name: "Pro plan", filter: { "properties.plan": "pro" } });
      expect((await call("PATCH /v1/segments/{id}", { url: `/v1/segments/${id}`, body: { filter: { "properties.plan": { $near: 1 } } } })).json().code).toBe("invalid_filter");
      expect((await call("PATCH /v1/segments/{id}", { url: "/v1/segments/seg_nope", body: {} })).statusCode).toBe(404);
      const page = await call("GET /v1/segments", { url: "/v1/segments?limit=1" });
      expect(page.json().segments).toMatchObject({ items: [{ id }], hasMore: true, cursor: id });
      expect((await call("GET /v1/segments", { url: "/v1/segments?cursor=bad" })).json().code).toBe("invalid_cursor");
      expect((await call("GET /v1/segments/{id}/count", { url: `/v1/segments/${id}/count` })).json()).toEqual({ count: 2 });
      expect((await call("GET /v1/segments/{id}/count", { url: `/v1/segments/${id}/count`, headers: KEY_B })).statusCode).toBe(404);
      const contacts = await call("GET /v1/segments/{id}/contacts", { url: `/v1/segments/${id}/contacts?limit=1` });
      expect(contacts.json().contacts).toMatchObject({ items: [{ properties: { email: "seg1@example.test", plan: "pro" } }], hasMore: true });
      const next = await call("GET /v1/segments/{id}/contacts", { url: `/v1/segments/${id}/contacts?limit=1&cursor=${contacts.json().contacts.cursor}` });
      expect(next.json().contacts).toMatchObject({ items: [{ properties: { email: "seg2@example.test" } }], hasMore: false, cursor: null });
      expect((await call("GET /v1/segments/{id}/contacts", { url: `/v1/segments/${id}/contacts?cursor=nope` })).json().code).toBe("invalid_cursor");
      expect((await call("GET /v1/segments/{id}/contacts", { url: "/v1/segments/seg_nope/contacts" })).statusCode).toBe(404);
      // A stored filter that no longer holds (written before a property it names went away).
      const stale = "seg_01jqz8k4m2x7v9c3n5b6t1w0ye";
      await audienceStoreOf!.collection("segments").insertOne({ _id: stale, workspaceId: "ws_oa", name: "Stale", filter: JSON.stringify({ "properties.gone": 1 }), createdAt: new Date(), updatedAt: new Date() });
      expect((await call("GET /v1/segments/{id}/count", { url: `/v1/segments/${stale}/count` })).json().code).toBe("invalid_filter");
      expect((await call("GET /v1/segments/{id}/contacts", { url: `/v1/segments/${stale}/contacts` })).json().code).toBe("invalid_filter");
      const deleted = await call("DELETE /v1/segments/{id}", { url: `/v1/segments/${id}` });
      expect(deleted.json()).toMatchObject({ isDeleted: true, segment: { id } });
      expect((await call("DELETE /v1/segments/{id}", { url: `/v1/segments/${id}` })).statusCode).toBe(404);
    });
  });

  describe("topics", () => {
    it("creates, reads, changes, lists and deletes topics; a contact's choices; the manage page's form", async () => {
      const created = await call("POST /v1/topics", { body: { name: "News", description: "Monthly", defaultSubscription: "OPT_OUT" } });
      expect(created.statusCode).toBe(201);
      const id = created.json().topic.id;
      expect((await call("POST /v1/topics", { body: { name: "News", defaultSubscription: "OPT_IN" } })).statusCode).toBe(409);
      expect((await call("POST /v1/topics", { body: { name: "", defaultSubscription: "OPT_IN" } })).statusCode).toBe(400);
      const other = (await call("POST /v1/topics", { body: { name: "Events", defaultSubscription: "OPT_IN" } })).json().topic.id;
      expect((await call("GET /v1/topics/{id}", { url: `/v1/topics/${id}` })).json().topic).toMatchObject({ id, name: "News" });
      expect((await call("GET /v1/topics/{id}", { url: `/v1/topics/${id}`, headers: KEY_B })).statusCode).toBe(404);
      expect((await call("PATCH /v1/topics/{id}", { url: `/v1/topics/${id}`, body: { description: null } })).json().topic).not.toHaveProperty("description");
      expect((await call("PATCH /v1/topics/{id}", { url: `/v1/topics/${id}`, body: { name: "Events" } })).statusCode).toBe(409);
      expect((await call("PATCH /v1/topics/{id}", { url: `/v1/topics/${id}`, body: { defaultSubscription: "maybe" } })).statusCode).toBe(400);
      expect((await call("PATCH /v1/topics/{id}", { url: "/v1/topics/top_nope", body: {} })).statusCode).toBe(404);
      const page = await call("GET /v1/topics", { url: "/v1/topics?limit=1" });
      expect(page.json().topics).toMatchObject({ items: [{ id }], hasMore: true });
      expect((await call("GET /v1/topics", { url: "/v1/topics?cursor=bad" })).statusCode).toBe(400);

      const contact = (await call("POST /v1/contacts", { body: { properties: { email: "topics@example.test" } } })).json().contact.id;
      expect((await call("GET /v1/contacts/{id}/topics", { url: `/v1/contacts/${contact}/topics` })).json().topics).toEqual([
        { id, name: "News", subscribed: true }, { id: other, name: "Events", subscribed: false },
      ]);
      expect((await call("GET /v1/contacts/{id}/topics", { url: "/v1/contacts/ctc_nope/topics" })).statusCode).toBe(404);
      const put = await call("PUT /v1/contacts/{id}/topics", { url: `/v1/contacts/${contact}/topics`, body: { topics: [{ id, subscribed: false }] } });
      expect(put.json().topics[0]).toEqual({ id, name: "News", subscribed: false });
      expect((await call("PUT /v1/contacts/{id}/topics", { url: `/v1/contacts/${contact}/topics`, body: { topics: [{ id: "top_nope", subscribed: true }] } })).json().code).toBe("unknown_topic");
      expect((await call("PUT /v1/contacts/{id}/topics", { url: "/v1/contacts/ctc_nope/topics", body: { topics: [] } })).statusCode).toBe(404);

      const token = signRecipientToken(SECRET, { workspaceId: "ws_oa", messageId: "", email: "topics@example.test", contactId: contact, contentId: "cmp_1" });
      const form = { url: `/u/${token}/topics`, contentType: "application/x-www-form-urlencoded" };
      const saved = await call("POST /u/{token}/topics", { ...form, payload: `shown=${id}&shown=${other}&topic=${other}` });
      expect(saved.json().topics).toEqual([{ id, name: "News", subscribed: false }, { id: other, name: "Events", subscribed: true }]);
      expect((await call("POST /u/{token}/topics", { ...form, payload: `shown=${id}`, headers: { origin: "https://evil.test" } })).statusCode).toBe(403);
      expect((await call("POST /u/{token}/topics", { ...form, body: { topics: [] }, contentType: "application/json" })).statusCode).toBe(400);

      expect((await call("DELETE /v1/topics/{id}", { url: `/v1/topics/${other}` })).json()).toMatchObject({ topic: { id: other }, isDeleted: true });
      expect((await call("DELETE /v1/topics/{id}", { url: `/v1/topics/${other}` })).statusCode).toBe(404);
    });
  });

  describe("signup forms", () => {
    it("creates, reads, changes, lists and deletes forms; the hosted page, signups, the preflight and the confirmation link", async () => {
      const created = await call("POST /v1/forms", { body: { name: "Footer", fields: ["firstName", { name: "seats", required: false }], redirectUrl: "https://acme.test/thanks" } });
      expect(created.statusCode).toBe(201);
      const id = created.json().form.id;
      expect((await call("POST /v1/forms", { body: { name: "x", fields: ["nope"] } })).json().code).toBe("invalid_form");
      expect((await call("POST /v1/forms", { body: { name: "x", fromEmail: "me@nowhere.test" } })).json().code).toBe("invalid_from");
      expect((await call("GET /v1/forms/{id}", { url: `/v1/forms/${id}` })).json().form).toEqual(created.json().form);
      expect((await call("GET /v1/forms/{id}", { url: `/v1/forms/${id}`, headers: KEY_B })).json().code).toBe("form_not_found");
      expect((await call("PATCH /v1/forms/{id}", { url: `/v1/forms/${id}`, body: { name: "Footer form" } })).json().form.name).toBe("Footer form");
      expect((await call("PATCH /v1/forms/{id}", { url: `/v1/forms/${id}`, body: { groups: ["nope"] } })).json().code).toBe("invalid_form");
      expect((await call("PATCH /v1/forms/{id}", { url: "/v1/forms/frm_nope", body: {} })).statusCode).toBe(404);
      expect((await call("GET /v1/forms", { url: "/v1/forms?limit=1" })).json().forms).toMatchObject({ items: [{ id }] });
      expect((await call("GET /v1/forms", { url: "/v1/forms?cursor=bad" })).json().code).toBe("invalid_cursor");

      const page = await call("GET /f/{formId}", { url: `/f/${id}` });
      expect(page.body).toContain(`name="seats"`);
      expect((await call("GET /f/{formId}", { url: "/f/frm_nope" })).statusCode).toBe(404);
      const pre = await call("OPTIONS /f/{formId}", { url: `/f/${id}`, headers: { origin: "https://blog.example", "access-control-request-method": "POST" } });
      expect(pre.statusCode).toBe(204);
      const json = await call("POST /f/{formId}", { url: `/f/${id}`, body: { email: "form@example.test", firstName: "Form" } });
      expect(json.json()).toEqual({ ok: true, doubleOptIn: false, message: "You are subscribed." });
      const posted = await call("POST /f/{formId}", { url: `/f/${id}`, payload: "email=form2%40example.test", contentType: "application/x-www-form-urlencoded", headers: { accept: "text/html" } });
      expect([posted.statusCode, posted.headers.location]).toEqual([303, "https://acme.test/thanks"]);
      expect((await call("POST /f/{formId}", { url: `/f/${id}`, body: { email: "nope" } })).json().code).toBe("invalid_email");
      expect((await call("POST /f/{formId}", { url: "/f/frm_nope", body: { email: "a@example.test" } })).json().code).toBe("form_not_found");
      for (let i = 0; i < 4; i++) await call("POST /f/{formId}", { url: `/f/${id}`, body: { email: "often@example.test" } });
      expect((await call("POST /f/{formId}", { url: `/f/${id}`, body: { email: "often@example.test" } })).statusCode).toBe(200);
      expect((await call("POST /f/{formId}", { url: `/f/${id}`, body: { email: "often@example.test" } })).json().code).toBe("rate_limited");

      const contact = (await call("POST /v1/contacts", { body: { properties: { email: "form@example.test" } } })).json().contact.id;
      const token = signSignupToken({ secret: SECRET }, { workspaceId: "ws_oa", formId: id, contactId: contact, email: "form@example.test", expiresAt: Date.now() + 60_000 });
      expect((await call("GET /c/{token}", { url: `/c/${token}` })).statusCode).toBe(303);
      expect((await call("GET /c/{token}", { url: `/c/${token}x` })).statusCode).toBe(400);
      await call("PATCH /v1/forms/{id}", { url: `/v1/forms/${id}`, body: { redirectUrl: null } });
      expect((await call("GET /c/{token}", { url: `/c/${token}` })).body).toContain("confirmed");

      expect((await call("DELETE /v1/forms/{id}", { url: `/v1/forms/${id}` })).json()).toMatchObject({ form: { id }, isDeleted: true });
      expect((await call("DELETE /v1/forms/{id}", { url: `/v1/forms/${id}` })).statusCode).toBe(404);
    });
  });

  describe("groups", () => {
    it("creates, reads, changes, lists and deletes groups; adds, lists and removes their contacts", async () => {
      const created = await call("POST /v1/groups", { body: { publicId: "acme", displayName: "Acme", traits: { seats: 40, tags: ["b2b"] } } });
      expect(created.statusCode).toBe(201);
      const id = created.json().group.id;
      expect((await call("POST /v1/groups", { body: { publicId: "acme" } })).json().code).toBe("group_public_id_taken");
      expect((await call("POST /v1/groups", { body: { publicId: "a b" } })).json().code).toBe("invalid_group");
      expect((await call("POST /v1/groups", { body: { publicId: "second" } })).statusCode).toBe(201);
      expect((await call("GET /v1/groups/{id}", { url: "/v1/groups/acme" })).json().group).toEqual(created.json().group);
      expect((await call("GET /v1/groups/{id}", { url: `/v1/groups/${id}`, headers: KEY_B })).json().code).toBe("group_not_found");
      expect((await call("PATCH /v1/groups/{id}", { url: `/v1/groups/${id}`, body: { displayName: null, traits: { seats: 41 } } })).json().group).toMatchObject({ traits: { seats: 41 }, updatedAt: expect.any(String) });
      expect((await call("PATCH /v1/groups/{id}", { url: `/v1/groups/${id}`, body: { traits: { $x: 1 } } })).json().code).toBe("invalid_group");
      expect((await call("PATCH /v1/groups/{id}", { url: "/v1/groups/nope", body: {} })).statusCode).toBe(404);
      const page = await call("GET /v1/groups", { url: "/v1/groups?limit=1" });
      expect(page.json()).toMatchObject({ items: [{ id }], hasMore: true, cursor: id });
      expect((await call("GET /v1/groups", { url: "/v1/groups?cursor=bad" })).json().code).toBe("invalid_cursor");

      const contact = (await call("POST /v1/contacts", { body: { properties: { email: "groups@example.test" } } })).json().contact.id;
      const members = `/v1/groups/${id}/contacts`;
      const added = await call("POST /v1/groups/{id}/contacts", { url: members, body: { contactId: contact } });
      expect([added.statusCode, added.json()]).toEqual([201, { groupId: id, contactId: contact, addedAt: expect.any(String) }]);
      expect((await call("POST /v1/groups/{id}/contacts", { url: "/v1/groups/acme/contacts", body: { contactId: contact } })).statusCode).toBe(200);
      expect((await call("POST /v1/groups/{id}/contacts", { url: members, body: {} })).statusCode).toBe(400);
      expect((await call("POST /v1/groups/{id}/contacts", { url: members, body: { contactId: "ctc_nope" } })).json().code).toBe("contact_not_found");
      expect((await call("GET /v1/groups/{id}/contacts", { url: members })).json()).toEqual({ items: [{ contactId: contact, addedAt: added.json().addedAt }], cursor: null, hasMore: false });
      // The contact's data export lists its groups.
      expect((await call("GET /v1/contacts/{id}/export", { url: `/v1/contacts/${contact}/export` })).json().groups).toEqual([{ id, publicId: "acme", addedAt: added.json().addedAt }]);
      expect((await call("GET /v1/groups/{id}/contacts", { url: `${members}?cursor=bad` })).statusCode).toBe(400);
      expect((await call("GET /v1/groups/{id}/contacts", { url: "/v1/groups/nope/contacts" })).statusCode).toBe(404);
      const removed = await call("DELETE /v1/groups/{id}/contacts/{contactId}", { url: `${members}/${contact}` });
      expect(removed.json()).toEqual({ groupId: id, contactId: contact, isRemoved: true });
      expect((await call("DELETE /v1/groups/{id}/contacts/{contactId}", { url: `/v1/groups/nope/contacts/${contact}` })).statusCode).toBe(404);

      expect((await call("DELETE /v1/groups/{id}", { url: "/v1/groups/acme" })).json()).toMatchObject({ group: { id }, isDeleted: true });
      expect((await call("DELETE /v1/groups/{id}", { url: `/v1/groups/${id}` })).statusCode).toBe(404);
    });

    it("lists, adds, lifts, imports and exports suppressions (addresses and whole domains)", async () => {
      const added = await call("POST /v1/suppressions", { body: { email: "Supp@Example.test", source: "openapi" } });
      expect(added.statusCode).toBe(201);
      expect(added.json().suppression).toEqual({ email: "supp@example.test", reason: "manual", createdAt: expect.any(String), source: "openapi" });
      expect((await call("POST /v1/suppressions", { body: { domain: "Blocked.test", reason: "complaint" } })).json().suppression).toMatchObject({ domain: "blocked.test", reason: "complaint" });
      expect((await call("POST /v1/suppressions", { body: { email: "nope" } })).json().code).toBe("invalid_email");
      expect((await call("POST /v1/suppressions", { body: { domain: "no pe" } })).json().code).toBe("invalid_domain");
      const page = await call("GET /v1/suppressions", { url: "/v1/suppressions?limit=1" });
      expect(page.json().suppressions).toMatchObject({ items: [{ domain: "blocked.test", reason: "complaint" }], hasMore: true, cursor: expect.any(String) });
      expect((await call("GET /v1/suppressions", { url: "/v1/suppressions?reason=complaint", headers: KEY_B })).json().suppressions.items).toEqual([]);
      expect((await call("GET /v1/suppressions", { url: "/v1/suppressions?reason=nope" })).json().code).toBe("invalid_request");
      const refused = await call("DELETE /v1/suppressions/{emailOrDomain}", { url: "/v1/suppressions/blocked.test" });
      expect([refused.statusCode, refused.json().code]).toEqual([409, "force_required"]);
      expect((await call("DELETE /v1/suppressions/{emailOrDomain}", { url: "/v1/suppressions/blocked.test?force=true" })).json()).toMatchObject({ suppression: { domain: "blocked.test" }, isDeleted: true });
      expect((await call("DELETE /v1/suppressions/{emailOrDomain}", { url: "/v1/suppressions/blocked.test" })).json().code).toBe("suppression_not_found");
      expect((await call("DELETE /v1/suppressions/{emailOrDomain}", { url: "/v1/suppressions/bad%20domain" })).json().code).toBe("invalid_domain");

      const imported = await call("POST /v1/suppressions/import", {
        url: "/v1/suppressions/import?filename=old.csv", payload: "email,reason\nimp@example.test,hard_bounce\nbad,\n", contentType: "text/csv",
      });
      expect(imported.json()).toEqual({ imported: 1, existing: 0, rejected: [{ line: 3, code: "invalid_email", reason: expect.any(String) }], rejectedCount: 1 });
      expect((await call("POST /v1/suppressions/import", { payload: "name\nx\n", contentType: "text/csv" })).json().code).toBe("invalid_csv");
      expect((await call("POST /v1/suppressions/import", { payload: "<x/>", contentType: "application/xml" })).statusCode).toBe(415);
      const exported = await call("GET /v1/suppressions/export");
      expect(exported.body.split("\n")[0]).toBe("email,domain,reason,created_at,source");
      expect(exported.body).toMatch(/^imp@example\.test,,hard_bounce,[^,]+,old\.csv$/m);
      expect((await call("GET /v1/suppressions/export", { url: "/v1/suppressions/export?since=yesterday" })).statusCode).toBe(400);
    });
  });

  describe("the checks themselves", () => {
    it("fail on a missing required field, an undocumented field or a wrong error shape", async () => {
      const res = await call("POST /v1/emails", { body: templatedEmail });
      const ok = operation("POST /v1/emails").operation.responses["200"].content!["application/json"].schema!;
      const v = validatorFor(ok);
      const { email } = res.json();
      expect(v({ email })).toBe(true);
      const { messageId: _messageId, ...withoutMessageId } = email;
      expect(v({ email: withoutMessageId })).toBe(false);
      const { template: _template, ...withoutTemplate } = email;
      expect(v({ email: withoutTemplate })).toBe(false);
      expect(v({ email: { ...email, from: "hello@acme.test" } })).toBe(false);
      expect(v({ email: { ...email, status: "QUEUED" } })).toBe(false);
      expect(v(email)).toBe(false);
      expect(() => checkResponse("POST /v1/emails", "/v1/emails", { ...res, json: () => ({ email: withoutMessageId }) } as LightMyRequestResponse)).toThrow(/messageId/);
      expect(() => checkResponse("GET /v1/emails/{id}", "/v1/emails/x", { ...res, statusCode: 418 } as LightMyRequestResponse)).toThrow(/does not list/);

      const invalidPayload = componentValidator("InvalidPayloadError");
      const body = { statusCode: 400, error: "Bad Request", code: "invalid_payload", message: "m", docsUrl: "http://localhost:8080/docs/errors/invalid_payload" };
      expect(invalidPayload(body)).toBe(true);
      expect(invalidPayload({ ...body, docsUrl: undefined })).toBe(false);
      expect(invalidPayload({ ...body, code: undefined })).toBe(false);
      expect(invalidPayload({ ...body, code: "invalid_request" })).toBe(false);
      expect(componentValidator("ApiError")({ statusCode: 404, error: "Not Found", message: "m" })).toBe(false);
    });

    it("drove every documented response through the gateway", () => {
      // Shared responses (401, 413, 415, 429, 503, link 404) are checked once each, on any
      // operation; every response an operation documents itself was produced by that operation.
      const notDriven: string[] = [];
      const missing: string[] = [];
      // Broadcast operations drive theirs in routes/broadcasts.test.ts (over the broadcast domain);
      // a broadcast's stats are driven here, with the other outcome routes. Automations and a
      // contact's runs drive theirs in routes/automations-api.test.ts (over the automation catalog);
      // relay provider webhooks in routes/provider-webhooks.test.ts (over the inbound unit's reader);
      // the audit log in routes/audit-log.test.ts; a contact's activity in routes/contacts-activity.test.ts;
      // receiving email in routes/receiving.test.ts (over a stand-in ReceivingService); a domain's
      // DMARC summary in routes/domains-dmarc.test.ts.
      const elsewhere = (p: string) =>
        (p.startsWith("/v1/broadcasts") && !p.endsWith("/stats")) || p.startsWith("/v1/automations") || p === "/v1/contacts/{id}/automation-runs" ||
        p === "/v1/contacts/{id}/activity" || p.startsWith("/v1/inbound/") || p.startsWith("/v1/received-emails") ||
        p.startsWith("/webhooks/") || p === "/v1/audit-log" || p === "/v1/domains/{id}/dmarc";
      for (const [path, item] of Object.entries(doc.paths).filter(([p]) => !elsewhere(p))) {
        for (const [method, o] of Object.entries(item)) {
          for (const [status, r] of Object.entries(o.responses)) {
            const key = `${method.toUpperCase()} ${path} ${status}`;
            if (!r.$ref && !covered.has(key) && !notDriven.includes(key)) missing.push(key);
          }
        }
      }
      expect(missing).toEqual([]);
      expect([...coveredComponents].sort()).toEqual(Object.keys(doc.components.responses).sort());
    });
  });
});
