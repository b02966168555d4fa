import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient, createLogger, loadConfig, startConnectServer, type ConnectServer } from "@mailroom/kit";
import { directoryRoutes, memoryDirectory, snapshot, type TestDirectory } from "../../services/audience/src/testing.js";
import { buildGateway } from "../../gateway/src/app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { registerContacts } from "../../gateway/src/routes/contacts.js";
import { registerContactItem } from "../../gateway/src/routes/contacts-item.js";
import { registerTemplates } from "../../gateway/src/routes/templates.js";
import { registerTemplateItem } from "../../gateway/src/routes/templates-item.js";

const A = { authorization: "Bearer mr_test_public_a_1" };
const B = { authorization: "Bearer mr_test_public_b_1" };

describe("public /v1/contacts and /v1/templates (gateway over the real accounts and audience services)", () => {
  let server: ConnectServer;
  let dir: TestDirectory;
  let app: FastifyInstance;

  beforeAll(async () => {
    dir = await memoryDirectory();
    await dir.bootstrap.load({
      workspaces: [
        { id: "ws_pa", name: "A", apiKeys: [{ key: "mr_test_public_a_1" }], contactProperties: [{ slug: "plan", type: "string" }, { slug: "seats", type: "number" }] },
        { id: "ws_pb", name: "B", apiKeys: [{ key: "mr_test_public_b_1" }, { key: "mr_test_public_b_admin", scopes: ["admin"] }] },
      ],
    });
    // AccountsService, TemplateService and ContactService on one server (directoryRoutes).
    server = await startConnectServer({ routes: directoryRoutes(dir), port: 0, logger: createLogger("public-api-test", "silent") });
    app = await buildGateway(
      {
        config: loadConfig({}),
        logger: createLogger("gateway-test", "silent"),
        clients: {
          accounts: connectClient(AccountsService, server.url),
          contacts: connectClient(ContactService, server.url),
          templates: connectClient(TemplateService, server.url),
        } as unknown as ServiceClients,
        rateLimitPerMinute: 0,
        authCacheMs: 1_000,
      },
      { api: [registerContacts, registerContactItem, registerTemplates, registerTemplateItem], public: [] },
    );
  });
  afterAll(async () => {
    await app?.close();
    await server?.close();
  });

  const call = (method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", url: string, headers: Record<string, string>, body?: unknown) =>
    app.inject({ method, url, headers: body === undefined ? headers : { ...headers, "content-type": "application/json" }, payload: body === undefined ? undefined : JSON.stringify(body) });

  it("upserts, reads, updates, lists and deletes contacts in the official client's envelopes", async () => {
    const created = await call("POST", "/v1/contacts", A, { properties: { email: "Ann@Example.test", firstName: "Ann", timezone: "Asia/Tokyo", plan: "pro", seats: 2 } });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toEqual({
      contact: {
        id: expect.stringMatching(/^ctc_/), workspaceId: "ws_pa", source: "PUBLIC_API", createdAt: expect.any(String), updatedAt: expect.any(String),
        properties: { email: "Ann@example.test", firstName: "Ann", timezone: "Asia/Tokyo", status: "SUBSCRIBED", plan: "pro", seats: 2 },
      },
    });
    const id = created.json().contact.id;
    const got = await call("GET", `/v1/contacts/${id}`, A);
    expect(got.json().contact).toMatchObject({ id, properties: { email: "Ann@example.test", firstName: "Ann" } });
    const updated = await call("PUT", `/v1/contacts/${id}`, A, { properties: { lastName: "Lee", status: "UNSUBSCRIBED", seats: null } });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().contact.properties).toEqual({ email: "Ann@example.test", firstName: "Ann", lastName: "Lee", timezone: "Asia/Tokyo", status: "UNSUBSCRIBED", plan: "pro" });
    // Create with an address that exists: the same contact, updated (an upsert), never a conflict.
    const upserted = await call("POST", "/v1/contacts", A, { properties: { email: "ann@example.test", plan: "team" } });
    expect(upserted.statusCode).toBe(200);
    expect(upserted.json().contact).toMatchObject({ id, properties: { plan: "team", status: "UNSUBSCRIBED" } });
    for (let i = 0; i < 4; i++) expect((await call("POST", "/v1/contacts", A, { properties: { email: `p${i}@example.test` } })).statusCode).toBe(201);
    const page1 = (await call("GET", "/v1/contacts?limit=3&sort=createdAt.asc", A)).json();
    expect(page1.contacts.items).toHaveLength(3);
    expect(page1.contacts).toMatchObject({ hasMore: true, cursor: expect.stringMatching(/^ctc_/) });
    const page2 = (await call("GET", `/v1/contacts?limit=3&sort=createdAt.asc&cursor=${page1.contacts.cursor}`, A)).json();
    expect(page2.contacts).toMatchObject({ hasMore: false, cursor: null });
    expect([...page1.contacts.items, ...page2.contacts.items].map((c: { properties: { email: string } }) => c.properties.email)).toEqual([
      "Ann@example.test", "p0@example.test", "p1@example.test", "p2@example.test", "p3@example.test",
    ]);
    expect((await call("GET", "/v1/contacts?limit=1", A)).json().contacts.items[0].properties.email).toBe("p3@example.test"); // newest first by default
    expect((await call("GET", "/v1/contacts?status=SUBSCRIBED&limit=100&includeCount=true", A)).json().contacts).toMatchObject({ totalCount: 4 });
    const deleted = await call("DELETE", "/v1/contacts/by-email/p3%40example.test", A);
    expect(deleted.json()).toMatchObject({ isDeleted: true, contact: { properties: { email: "p3@example.test" } } });
    expect((await call("GET", "/v1/contacts/search?email=p3%40example.test", A)).json()).toEqual({ contact: null });
    const p2 = (await call("GET", "/v1/contacts/search?email=p2%40example.test", A)).json().contact;
    expect((await call("DELETE", `/v1/contacts/${p2.id}`, A)).json()).toMatchObject({ isDeleted: true, contact: { id: p2.id } });
    expect((await call("GET", `/v1/contacts/${p2.id}`, A)).statusCode).toBe(404);
  });

  it("answers bad contact input with clear 4xx bodies and changes nothing", async () => {
    const { contact } = (await call("POST", "/v1/contacts", A, { properties: { email: "dup@example.test" } })).json();
    const before = await snapshot(dir);
    const cases: Array<[string, string, unknown, number, string]> = [
      ["POST", "/v1/contacts", { properties: { email: "not an email" } }, 400, "invalid_email"],
      ["POST", "/v1/contacts", { properties: { email: "x@example.test", colour: "red" } }, 400, "unknown_contact_property"],
      ["POST", "/v1/contacts", { properties: { email: "x@example.test", seats: "many" } }, 400, "invalid_property_value"],
      ["POST", "/v1/contacts", { properties: { email: "x@example.test", timezone: "Atlantis/Capital" } }, 400, "invalid_timezone"],
      ["POST", "/v1/contacts", { properties: { email: "x@example.test", status: "GONE" } }, 400, "invalid_request"],
      ["POST", "/v1/contacts", { properties: { email: "x@example.test" }, nickname: "x" }, 400, "invalid_request"],
      ["POST", "/v1/contacts", { properties: { firstName: "no email" } }, 400, "invalid_request"],
      ["POST", "/v1/contacts", [1, 2], 400, "invalid_request"],
      ["PUT", `/v1/contacts/${contact.id}`, { properties: { email: "other@example.test" } }, 400, "invalid_contact"],
      ["PUT", "/v1/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye", { properties: { firstName: "X" } }, 404, "contact_not_found"],
      ["GET", "/v1/contacts?limit=1000", undefined, 400, "invalid_request"],
      ["GET", "/v1/contacts?cursor=abc", undefined, 400, "invalid_cursor"],
    ];
    for (const [method, url, body, status, code] of cases) {
      const res = await call(method as "POST", url, A, body);
      expect(res.statusCode, `${method} ${url} ${JSON.stringify(body)}`).toBe(status);
      expect(res.json()).toMatchObject({ statusCode: status, error: expect.any(String), message: expect.any(String), code });
    }
    expect(await snapshot(dir)).toEqual(before);
  });

  it("manages templates: 201 on create, 409 on a taken name, PUT replaces, 404 when missing", async () => {
    const created = await call("POST", "/v1/templates", A, { name: "welcome", subject: "Hi {{firstName}}", html: "<p>{{plan}}</p>" });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toEqual({
      template: {
        id: expect.stringMatching(/^tpl_/), name: "welcome", subject: "Hi {{firstName}}", html: "<p>{{plan}}</p>", text: null, previewText: null,
        variables: ["firstName", "plan"], displayName: "welcome", fromEmail: null, fromName: null, replyTo: [], status: "ACTIVE",
        kind: "template", format: "liquid", layout: null, version: 1, source: null,
        createdAt: expect.any(String), updatedAt: expect.any(String),
      },
    });
    expect((await call("POST", "/v1/templates", A, { name: "welcome", subject: "x", html: "x" })).json()).toMatchObject({ statusCode: 409, code: "template_exists" });
    const put = await call("PUT", "/v1/templates/welcome", A, { subject: "Hello {{lastName}}", html: "<p>new</p>", text: "new" });
    expect(put.json().template).toMatchObject({ subject: "Hello {{lastName}}", text: "new", variables: ["lastName"] });
    expect((await call("PUT", "/v1/templates/welcome", A, { name: "renamed", subject: "x", html: "x" })).statusCode).toBe(400);
    const list = (await call("GET", "/v1/templates", A)).json();
    expect(list.templates).toMatchObject({ hasMore: false, cursor: null });
    expect(list.templates.items).toEqual([expect.objectContaining({ name: "welcome", subject: "Hello {{lastName}}" })]);
    expect(list.templates.items[0]).not.toHaveProperty("html");
    expect((await call("GET", "/v1/templates/welcome", A)).json().template.html).toBe("<p>new</p>");
    expect((await call("POST", "/v1/templates", A, { name: "bad/name", subject: "x", html: "x" })).json()).toMatchObject({ statusCode: 400, code: "invalid_template_name" });
    expect((await call("POST", "/v1/templates", A, { name: "t2", subject: "x" })).json()).toMatchObject({ statusCode: 400, code: "invalid_request" });
    expect((await call("DELETE", "/v1/templates/welcome", A)).json()).toEqual({ deleted: true, name: "welcome" });
    const missing = await call("GET", "/v1/templates/welcome", A);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ statusCode: 404, error: "Not Found", message: expect.stringMatching(/welcome/) });
  });

  it("derives the workspace from the key: B never sees or touches A's contacts or templates", async () => {
    const secret = (await call("POST", "/v1/contacts", A, { properties: { email: "secret@a.test", firstName: "Secret" } })).json().contact;
    await call("POST", "/v1/templates", A, { name: "a-only", subject: "A", html: "<p>A</p>" });
    const before = await snapshot(dir);
    expect((await call("GET", `/v1/contacts/${secret.id}`, B)).statusCode).toBe(404);
    expect((await call("PUT", `/v1/contacts/${secret.id}`, B, { properties: { firstName: "Pwned" } })).statusCode).toBe(404);
    expect((await call("DELETE", `/v1/contacts/${secret.id}`, B)).statusCode).toBe(404);
    expect((await call("DELETE", "/v1/contacts/by-email/secret%40a.test", B)).statusCode).toBe(404);
    expect((await call("GET", "/v1/contacts/search?email=secret%40a.test", B)).json()).toEqual({ contact: null });
    expect((await call("GET", "/v1/contacts?limit=100", B)).json().contacts.items).toEqual([]);
    const aCursor = (await call("GET", "/v1/contacts?limit=1", A)).json().contacts.cursor;
    expect((await call("GET", `/v1/contacts?cursor=${aCursor}`, B)).json().contacts.items).toEqual([]);
    expect((await call("GET", "/v1/templates/a-only", B)).statusCode).toBe(404);
    expect((await call("PUT", "/v1/templates/a-only", B, { subject: "B", html: "B" })).statusCode).toBe(404);
    expect((await call("DELETE", "/v1/templates/a-only", B)).statusCode).toBe(404);
    expect((await call("GET", "/v1/templates", B)).json().templates.items).toEqual([]);
    expect(await snapshot(dir)).toEqual(before);
    // B may create its own contact with the same email: a separate record.
    const theirs = (await call("POST", "/v1/contacts", B, { properties: { email: "secret@a.test" } })).json().contact;
    expect(theirs.id).not.toBe(secret.id);
    expect(theirs.properties.firstName).toBeUndefined();
    expect((await call("GET", `/v1/contacts/${secret.id}`, A)).json().contact.properties.firstName).toBe("Secret");
  });

  it("refuses missing, unknown and under-scoped keys with 401", async () => {
    const keys: Array<Record<string, string>> = [{}, { authorization: "Bearer mr_test_nobody_123" }, { authorization: "Bearer mr_test_public_b_admin" }];
    for (const headers of keys) {
      for (const url of ["/v1/contacts", "/v1/templates", "/v1/contacts/search?email=secret%40a.test", "/v1/templates/a-only"]) {
        const res = await call("GET", url, headers);
        expect(res.statusCode, `${url} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.json()).toEqual({ statusCode: 401, error: "Unauthorized", code: "unauthorized", message: expect.any(String), docsUrl: expect.stringMatching(/\/docs\/errors\/unauthorized$/) });
      }
    }
  });
});
