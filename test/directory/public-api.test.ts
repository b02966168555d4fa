import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import { DirectoryService } from "../../gen/mailroom/directory/v1/directory_pb.js";
import { connectClient, createLogger, loadConfig, startConnectServer, type ConnectServer } from "../../services/kit/src/index.js";
import { directoryRoutes } from "../../services/directory/src/routes.js";
import { memoryDirectory, snapshot } from "../../services/directory/src/test-support.js";
import type { Directory } from "../../services/directory/src/directory.js";
import { buildGateway } from "../../gateway/src/app.js";
import type { ServiceClients } from "../../gateway/src/deps.js";
import { registerContacts } from "../../gateway/src/routes/contacts.js";
import { registerContactItem } from "../../gateway/src/routes/contacts-item.js";
import { registerTemplates } from "../../gateway/src/routes/templates.js";
import { registerTemplateItem } from "../../gateway/src/routes/templates-item.js";

const A = { authorization: "Bearer mr_test_public_a_1" };
const B = { authorization: "Bearer mr_test_public_b_1" };

describe("public /v1/contacts and /v1/templates (gateway over the real directory)", () => {
  let directoryServer: ConnectServer;
  let dir: Directory;
  let app: FastifyInstance;

  beforeAll(async () => {
    dir = await memoryDirectory();
    await dir.bootstrap.load({
      workspaces: [
        { id: "ws_pa", name: "A", apiKeys: [{ key: "mr_test_public_a_1" }], contactProperties: [{ slug: "plan", type: "string" }, { slug: "seats", type: "number" }] },
        { id: "ws_pb", name: "B", apiKeys: [{ key: "mr_test_public_b_1" }, { key: "mr_test_public_b_admin", scopes: ["admin"] }] },
      ],
    });
    directoryServer = await startConnectServer({ routes: directoryRoutes(dir), port: 0, logger: createLogger("directory-test", "silent") });
    app = await buildGateway(
      {
        config: loadConfig({}),
        logger: createLogger("gateway-test", "silent"),
        clients: { directory: connectClient(DirectoryService, directoryServer.url) } as unknown as ServiceClients,
        rateLimitPerMinute: 0,
        authCacheMs: 1_000,
      },
      { api: [registerContacts, registerContactItem, registerTemplates, registerTemplateItem], public: [] },
    );
  });
  afterAll(async () => {
    await app?.close();
    await directoryServer?.close();
  });

  const call = (method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", url: string, headers: Record<string, string>, body?: unknown) =>
    app.inject({ method, url, headers: body === undefined ? headers : { ...headers, "content-type": "application/json" }, payload: body === undefined ? undefined : JSON.stringify(body) });

  it("creates, reads, patches, lists and deletes contacts in the spec's envelopes", async () => {
    const created = await call("POST", "/v1/contacts", A, { email: "Ann@Example.test", firstName: "Ann", timezone: "Asia/Tokyo", properties: { plan: "pro", seats: 2 } });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toEqual({
      contact: {
        id: expect.stringMatching(/^ctc_/), email: "Ann@example.test", firstName: "Ann", lastName: null, timezone: "Asia/Tokyo",
        subscribed: true, properties: { plan: "pro", seats: 2 }, createdAt: expect.any(String), updatedAt: expect.any(String),
      },
    });
    const got = await call("GET", "/v1/contacts/ann%40example.test", A);
    expect(got.json().contact).toMatchObject({ email: "Ann@example.test", firstName: "Ann" });
    const patched = await call("PATCH", "/v1/contacts/ann@example.test", A, { lastName: "Lee", subscribed: false, properties: { seats: null } });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().contact).toMatchObject({ lastName: "Lee", subscribed: false, properties: { plan: "pro" } });
    for (let i = 0; i < 4; i++) expect((await call("POST", "/v1/contacts", A, { email: `p${i}@example.test` })).statusCode).toBe(201);
    const page1 = (await call("GET", "/v1/contacts?limit=3", A)).json();
    expect(page1.contacts.items).toHaveLength(3);
    expect(page1.contacts).toMatchObject({ hasMore: true, cursor: expect.stringMatching(/^ctc_/) });
    const page2 = (await call("GET", `/v1/contacts?limit=3&cursor=${page1.contacts.cursor}`, A)).json();
    expect(page2.contacts).toMatchObject({ hasMore: false, cursor: null });
    expect([...page1.contacts.items, ...page2.contacts.items].map((c: { email: string }) => c.email)).toEqual([
      "Ann@example.test", "p0@example.test", "p1@example.test", "p2@example.test", "p3@example.test",
    ]);
    expect((await call("GET", "/v1/contacts?subscribed=true&limit=100", A)).json().contacts.items).toHaveLength(4);
    const deleted = await call("DELETE", "/v1/contacts/p3@example.test", A);
    expect(deleted.json()).toEqual({ deleted: true, email: "p3@example.test" });
    expect((await call("GET", "/v1/contacts/p3@example.test", A)).statusCode).toBe(404);
  });

  it("answers bad contact input with clear 4xx bodies and changes nothing", async () => {
    await call("POST", "/v1/contacts", A, { email: "dup@example.test" });
    const before = await snapshot(dir);
    const cases: Array<[string, string, unknown, number, string]> = [
      ["POST", "/v1/contacts", { email: "dup@EXAMPLE.test" }, 409, "contact_exists"],
      ["POST", "/v1/contacts", { email: "not an email" }, 400, "invalid_email"],
      ["POST", "/v1/contacts", { email: "x@example.test", properties: { colour: "red" } }, 400, "unknown_contact_property"],
      ["POST", "/v1/contacts", { email: "x@example.test", properties: { seats: "many" } }, 400, "invalid_property_value"],
      ["POST", "/v1/contacts", { email: "x@example.test", timezone: "Atlantis/Capital" }, 400, "invalid_timezone"],
      ["POST", "/v1/contacts", { email: "x@example.test", nickname: "x" }, 400, "invalid_request"],
      ["POST", "/v1/contacts", { firstName: "no email" }, 400, "invalid_request"],
      ["POST", "/v1/contacts", [1, 2], 400, "invalid_request"],
      ["PATCH", "/v1/contacts/dup@example.test", { email: "other@example.test" }, 400, "invalid_request"],
      ["PATCH", "/v1/contacts/nobody@example.test", { firstName: "X" }, 404, "contact_not_found"],
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
        variables: ["firstName", "plan"], createdAt: expect.any(String), updatedAt: expect.any(String),
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
    await call("POST", "/v1/contacts", A, { email: "secret@a.test", firstName: "Secret" });
    await call("POST", "/v1/templates", A, { name: "a-only", subject: "A", html: "<p>A</p>" });
    const before = await snapshot(dir);
    expect((await call("GET", "/v1/contacts/secret@a.test", B)).statusCode).toBe(404);
    expect((await call("PATCH", "/v1/contacts/secret@a.test", B, { firstName: "Pwned" })).statusCode).toBe(404);
    expect((await call("DELETE", "/v1/contacts/secret@a.test", B)).statusCode).toBe(404);
    expect((await call("GET", "/v1/contacts?limit=100", B)).json().contacts.items).toEqual([]);
    const aCursor = (await call("GET", "/v1/contacts?limit=1", A)).json().contacts.cursor;
    expect((await call("GET", `/v1/contacts?cursor=${aCursor}`, B)).json().contacts.items).toEqual([]);
    expect((await call("GET", "/v1/templates/a-only", B)).statusCode).toBe(404);
    expect((await call("PUT", "/v1/templates/a-only", B, { subject: "B", html: "B" })).statusCode).toBe(404);
    expect((await call("DELETE", "/v1/templates/a-only", B)).statusCode).toBe(404);
    expect((await call("GET", "/v1/templates", B)).json().templates.items).toEqual([]);
    expect(await snapshot(dir)).toEqual(before);
    // B may create its own contact with the same email: a separate record.
    expect((await call("POST", "/v1/contacts", B, { email: "secret@a.test" })).json().contact.firstName).toBeNull();
    expect((await call("GET", "/v1/contacts/secret@a.test", A)).json().contact.firstName).toBe("Secret");
  });

  it("refuses missing, unknown and under-scoped keys with 401", async () => {
    const keys: Array<Record<string, string>> = [{}, { authorization: "Bearer mr_test_nobody_123" }, { authorization: "Bearer mr_test_public_b_admin" }];
    for (const headers of keys) {
      for (const url of ["/v1/contacts", "/v1/templates", "/v1/contacts/secret@a.test", "/v1/templates/a-only"]) {
        const res = await call("GET", url, headers);
        expect(res.statusCode, `${url} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.json()).toEqual({ statusCode: 401, error: "Unauthorized", message: expect.any(String) });
      }
    }
  });
});
