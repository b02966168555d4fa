import { describe, expect, it } from "vitest";
import { signRecipientToken } from "@mailroom/content/tokens.js";
import { signSignupToken } from "./signup-tokens.js";
import { KEY_B, SECRET, audienceStoreOf, call, expectDriven, useOpenApiGateway } from "./openapi-test-support.js";

/**
 * The OpenAPI document (generated from the routes' zod schemas, served at /openapi.json) against
 * the gateway: real responses validate against the documented schemas for their status.
 * This file: segments, topics, forms, groups and suppressions; the gateway and the checks are in openapi-test-support.ts.
 */

describe("the generated OpenAPI document against the gateway: segments, topics, forms, groups and suppressions", () => {
  useOpenApiGateway();

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

  it("drove every documented response of its concern through the gateway", () => expectDriven("audiences"));
});
