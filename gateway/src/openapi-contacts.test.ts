import { describe, expect, it } from "vitest";
import { type Call, KEY_B, call, expectDriven, rawEmail, requestIsValid, useOpenApiGateway } from "./openapi-test-support.js";

/**
 * The OpenAPI document (generated from the routes' zod schemas, served at /openapi.json) against
 * the gateway: real responses validate against the documented schemas for their status.
 * This file: contacts, properties, events, API keys and templates; the gateway and the checks are in openapi-test-support.ts.
 */

describe("the generated OpenAPI document against the gateway: contacts, properties, events, API keys and templates", () => {
  useOpenApiGateway();

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

  it("drove every documented response of its concern through the gateway", () => expectDriven("contacts"));
});
