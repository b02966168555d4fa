import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { fromBinary } from "@bufbuild/protobuf";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { ContactEventSchema } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { CONTACT_EVENTS_SUBJECTS } from "@mailroom/pipeline/subjects.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * The official client's wire contract (shared/spec/sdk-wire-contract.md) against the real
 * accounts, audience, renderer, email, delivery and gateway processes: every route of its §2 index
 * (webhooks aside; the two email sends have their own suite, here only where a template's
 * sender or a transactional contact matters), sent exactly as @smashsend/node 1.19.0 sends
 * it (§1: headers incl. Content-Type on GET/DELETE, query encoding, ids unencoded in paths),
 * and every field the client reads checked.
 */

const EDITOR = "mr_test_sdk_editor_1";
const VIEWER = "mr_test_sdk_viewer_1";
const SCOPELESS = "mr_test_sdk_scopeless_1";
const OTHER = "mr_test_sdk_other_1";

const TEMPLATE_COUNT = 16;
const bootstrap = {
  workspaces: [
    {
      id: "ws_sdk", name: "SDK", timezone: "UTC",
      apiKeys: [
        { key: EDITOR, scopes: ["api_user"], name: "editor" },
        { key: VIEWER, scopes: ["api_read"] },
        { key: SCOPELESS, scopes: [] },
      ],
      verifiedEmails: ["founder@gmail.test"], verifiedDomains: ["acme.test"], members: [],
      monthlyLimit: 10_000, sendingAccountNew: false,
      contactProperties: [{ slug: "plan", type: "string" }],
      templates: [
        { name: "receipt", subject: "Receipt {{orderId}}", html: "<p>Order {{orderId}} for {{firstName}}</p>", text: "Order {{orderId}}", previewText: "Thanks",
          fromEmail: "billing@acme.test", fromName: "Acme Billing", replyTo: [{ email: "help@acme.test", name: "Help" }] },
        { name: "plain", subject: "Plain", html: "<p>plain</p>" },
        ...Array.from({ length: TEMPLATE_COUNT - 2 }, (_, i) => ({ name: `filler-${i}`, subject: `Filler ${i}`, html: "<p>x</p>" })),
      ],
    },
    {
      id: "ws_sdk_other", name: "Other", timezone: "UTC",
      apiKeys: [{ key: OTHER, scopes: ["api_user"] }], verifiedEmails: [], verifiedDomains: ["other.test"], members: [],
      monthlyLimit: 1000, sendingAccountNew: false,
    },
  ],
};

type Params = Record<string, string | number | boolean | string[] | undefined | null>;
interface Answer { status: number; body: any; headers: Headers; contentType: string }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the official client's wire contract", () => {
  let sys: TestSystem;
  let nc: NatsConnection;

  /**
   * One request as the SDK's HttpClient makes it: `/v1` + the path as given (ids are not
   * encoded), query values stringified with undefined/null left out and arrays repeated,
   * the fixed headers of §1.2 on every method, a JSON body on everything but GET and DELETE.
   */
  async function sdk(method: "GET" | "POST" | "PUT" | "DELETE", path: string, opts: { key?: string; body?: unknown; params?: Params } = {}): Promise<Answer> {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.params ?? {})) {
      if (v === undefined || v === null) continue;
      for (const item of Array.isArray(v) ? v : [v]) query.append(k, String(item));
    }
    const url = `${sys.gatewayUrl}/v1${path}${query.size ? `?${query}` : ""}`;
    const res = await fetch(url, {
      method,
      headers: {
        Authorization: `Bearer ${opts.key ?? EDITOR}`,
        "Content-Type": "application/json",
        Accept: "application/json",
        "User-Agent": "SMASHSEND Node SDK v0.2.5",
        "Accept-Encoding": "gzip,deflate",
        Connection: "close",
      },
      body: method === "GET" || method === "DELETE" ? undefined : JSON.stringify(opts.body ?? {}),
    });
    const contentType = res.headers.get("content-type") ?? "";
    const text = await res.text();
    return { status: res.status, body: contentType.includes("application/json") ? JSON.parse(text) : text, headers: res.headers, contentType };
  }

  /** A success the client accepts: 2xx, JSON (it would hand raw text to the caller otherwise). */
  function ok(res: Answer, status = 200) {
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(status);
    expect(res.contentType).toContain("application/json");
    return res.body;
  }

  /** An error the client turns into APIError: a flat body with a string message and a code, and x-request-id. */
  function refused(res: Answer, status: number, code?: string) {
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(status);
    expect(res.contentType).toContain("application/json");
    expect(typeof res.body.message).toBe("string");
    expect(res.body.error === undefined || typeof res.body.error === "string").toBe(true);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    if (code) expect(res.body.code).toBe(code);
    return res.body;
  }

  /** Every field the client reads on a Contact (§4.1). */
  function expectContact(c: any, props: Record<string, unknown> = {}) {
    expect(c).toMatchObject({ id: expect.stringMatching(/^ctc_/), createdAt: expect.any(String), workspaceId: "ws_sdk" });
    expect(new Date(c.createdAt).toISOString()).toBe(c.createdAt);
    if (c.updatedAt !== undefined) expect(new Date(c.updatedAt).toISOString()).toBe(c.updatedAt);
    expect(typeof c.properties.email).toBe("string");
    expect(["SUBSCRIBED", "UNSUBSCRIBED", "ARCHIVED", "OPT_IN_PENDING", "BANNED"]).toContain(c.properties.status);
    expect(c.properties).toMatchObject(props);
  }

  beforeAll(async () => {
    sys = await useSystem({
      bootstrap,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
    });
    nc = await connect({ servers: sys.nats.url });
  }, 120_000);
  afterAll(async () => {
    await nc?.close();
    await sys?.stop();
  });

  describe("transport (§1)", () => {
    it("accepts Content-Type: application/json on GET and DELETE without a body, and answers JSON", async () => {
      ok(await sdk("GET", "/contacts", { params: { limit: 1 } }));
      const { contact } = ok(await sdk("POST", "/contacts", { body: { properties: { email: "transport@example.test" } } }), 201);
      ok(await sdk("DELETE", `/contacts/${contact.id}`));
    });

    it("answers a bad key with 401 and an unknown route with a flat JSON 404", async () => {
      refused(await sdk("GET", "/contacts", { key: "mr_test_nobody_123" }), 401);
      refused(await sdk("GET", "/nothing-here"), 404, "not_found");
    });
  });

  describe("contacts (§4)", () => {
    let ann: any;

    it("create = upsert: a new address is created (201), an existing one updated (200), never a conflict", async () => {
      const created = ok(await sdk("POST", "/contacts", {
        body: { properties: { email: "ann@example.test", firstName: "Ann", lastName: "Lee", city: "Kyoto", countryCode: "jp", language: "ja", phone: "+81 3", birthday: "1990-04-01", avatarUrl: "https://example.test/a.png", plan: "pro", createdAt: "2001-01-01T00:00:00.000Z" } },
      }), 201);
      ann = created.contact;
      expectContact(ann, { email: "ann@example.test", firstName: "Ann", lastName: "Lee", city: "Kyoto", countryCode: "JP", language: "ja", phone: "+81 3", birthday: "1990-04-01", avatarUrl: "https://example.test/a.png", status: "SUBSCRIBED", plan: "pro" });
      expect(ann.createdAt).not.toBe("2001-01-01T00:00:00.000Z"); // createdAt is for batches with overrideCreatedAt only
      const upserted = ok(await sdk("POST", "/contacts", { body: { properties: { email: "ANN@example.test", firstName: "Annie" } } }));
      expectContact(upserted.contact, { email: "ann@example.test", firstName: "Annie", lastName: "Lee", plan: "pro" });
      expect(upserted.contact.id).toBe(ann.id);
    });

    it("gets by id; fixed segments (search, properties, batch, by-email) win over {id}", async () => {
      expectContact(ok(await sdk("GET", `/contacts/${ann.id}`)).contact, { email: "ann@example.test" });
      refused(await sdk("GET", "/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye"), 404);
      refused(await sdk("GET", `/contacts/${ann.id}`, { key: OTHER }), 404);
      expect(ok(await sdk("GET", "/contacts/search", { params: { email: "ann@example.test" } })).contact.id).toBe(ann.id);
      expect(ok(await sdk("GET", "/contacts/search", { params: { email: "nobody@example.test" } }))).toEqual({ contact: null });
      expect(ok(await sdk("GET", "/contacts/search", { params: { email: "ann@example.test" }, key: OTHER }))).toEqual({ contact: null });
      expect(ok(await sdk("GET", "/contacts/properties", { params: { type: "CUSTOM", limit: 50 } })).properties.items).toEqual(expect.any(Array));
    });

    it("updates only what is given (PUT); status SUBSCRIBED resubscribes", async () => {
      const updated = ok(await sdk("PUT", `/contacts/${ann.id}`, { body: { properties: { city: "Osaka", status: "UNSUBSCRIBED" } } })).contact;
      expectContact(updated, { email: "ann@example.test", firstName: "Annie", lastName: "Lee", city: "Osaka", status: "UNSUBSCRIBED", plan: "pro" });
      const cleared = ok(await sdk("PUT", `/contacts/${ann.id}`, { body: { properties: { phone: null, status: "SUBSCRIBED" } } })).contact;
      expect(cleared.properties.phone).toBeUndefined();
      expect(cleared.properties.status).toBe("SUBSCRIBED");
      refused(await sdk("PUT", "/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye", { body: { properties: { firstName: "X" } } }), 404);
      refused(await sdk("PUT", `/contacts/${ann.id}`, { body: { properties: { firstName: "Pwned" } }, key: OTHER }), 404);
    });

    it("lists with limit, cursor, sort, search, status and includeCount", async () => {
      for (const email of ["l1@example.test", "l2@example.test", "l3@example.test"]) ok(await sdk("POST", "/contacts", { body: { properties: { email } } }), 201);
      ok(await sdk("POST", "/contacts", { body: { properties: { email: "gone@example.test", firstName: "Gone", status: "ARCHIVED" } } }), 201);
      const first = ok(await sdk("GET", "/contacts", { params: { limit: 2, sort: "createdAt.desc", includeCount: true } })).contacts;
      expect(first.items.map((c: any) => c.properties.email)).toEqual(["gone@example.test", "l3@example.test"]);
      first.items.forEach((c: any) => expectContact(c));
      expect(first).toMatchObject({ hasMore: true, cursor: expect.any(String), totalCount: 5 });
      const next = ok(await sdk("GET", "/contacts", { params: { limit: 2, sort: "createdAt.desc", cursor: first.cursor } })).contacts;
      expect(next.items.map((c: any) => c.properties.email)).toEqual(["l2@example.test", "l1@example.test"]);
      const asc = ok(await sdk("GET", "/contacts", { params: { limit: 1, sort: "createdAt.asc" } })).contacts;
      expect(asc.items[0].properties.email).toBe("ann@example.test");
      expect(ok(await sdk("GET", "/contacts", { params: { search: "gone", status: "ARCHIVED" } })).contacts.items.map((c: any) => c.properties.email)).toEqual(["gone@example.test"]);
      expect(ok(await sdk("GET", "/contacts", { params: { search: "GON", status: "SUBSCRIBED" } })).contacts.items).toEqual([]);
      expect(ok(await sdk("GET", "/contacts", { params: { limit: 100, status: "SUBSCRIBED" } })).contacts.items).toHaveLength(4);
      expect(ok(await sdk("GET", "/contacts", { key: OTHER })).contacts).toMatchObject({ items: [], hasMore: false });
      // The client sends `filter` as it is given: a JSON string is the filter language (DESIGN §9.4),
      // an object arrives as "[object Object]", which is no filter.
      const filtered = ok(await sdk("GET", "/contacts", { params: { filter: JSON.stringify({ email: { $startsWith: "l" } }), includeCount: true } })).contacts;
      expect([filtered.items.map((c: any) => c.properties.email).sort(), filtered.totalCount]).toEqual([["l1@example.test", "l2@example.test", "l3@example.test"], 3]);
      refused(await sdk("GET", "/contacts", { params: { filter: { status: "x" } as unknown as string } }), 400, "invalid_filter");
    });

    it("batch: all or nothing by default; allowPartialSuccess, includeFailedContacts and overrideCreatedAt", async () => {
      const contacts = [
        { properties: { email: "b1@example.test", firstName: "B1", plan: "team", createdAt: "2020-02-02T00:00:00.000Z" } },
        { properties: { email: "not an address", firstName: "Bad", plan: "x" } },
        { properties: { email: "ann@example.test", lastName: "Batch" } },
      ];
      const whole = refused(await sdk("POST", "/contacts/batch", { body: { contacts }, params: { includeFailedContacts: true } }), 400, "contacts_batch_invalid");
      expect(whole.errors).toEqual([{ index: 1, email: "not an address", errors: [{ code: "invalid_email", message: expect.any(String) }] }]);
      expect(ok(await sdk("GET", "/contacts/search", { params: { email: "b1@example.test" } })).contact).toBeNull();

      const started = Date.now();
      const result = ok(await sdk("POST", "/contacts/batch", { body: { contacts }, params: { allowPartialSuccess: true, includeFailedContacts: true, overrideCreatedAt: true } }));
      expect(result.requestId).toEqual(expect.any(String));
      expect(result.summary).toEqual({ created: 1, updated: 1, failed: 1, total: 3, processingTime: expect.any(Number) });
      expect(result.summary.processingTime).toBeLessThanOrEqual(Date.now() - started);
      expect(result.contacts.map((c: any) => c.properties.email)).toEqual(["b1@example.test", "ann@example.test"]);
      result.contacts.forEach((c: any) => expectContact(c));
      expect(result.contacts[0].createdAt).toBe("2020-02-02T00:00:00.000Z");
      expect(result.contacts[1]).toMatchObject({ id: ann.id, properties: { lastName: "Batch" } });
      expect(result.errors).toEqual([{ index: 1, email: "not an address", errors: [{ code: "invalid_email", message: expect.any(String) }] }]);
      // The flat input form, fit to send again through createBatch.
      expect(result.failedContacts).toEqual([{
        index: 1, contact: { email: "not an address", firstName: "Bad", customProperties: { plan: "x" } }, errors: [{ code: "invalid_email", message: expect.any(String) }],
      }]);
      const noFlags = ok(await sdk("POST", "/contacts/batch", { body: { contacts: [contacts[0]] } }));
      expect(noFlags.summary).toMatchObject({ created: 0, updated: 1, failed: 0, total: 1 });
      expect(noFlags.failedContacts).toBeUndefined();
    });

    it("deletes by id and by address (encoded), answering { isDeleted, contact }", async () => {
      const plus = ok(await sdk("POST", "/contacts", { body: { properties: { email: "a+b@x.io" } } }), 201).contact;
      const byEmail = ok(await sdk("DELETE", `/contacts/by-email/${encodeURIComponent("a+b@x.io")}`));
      expect(byEmail.isDeleted).toBe(true);
      expectContact(byEmail.contact, { email: "a+b@x.io" });
      expect(byEmail.contact.id).toBe(plus.id);
      refused(await sdk("DELETE", `/contacts/by-email/${encodeURIComponent("a+b@x.io")}`), 404);
      const l1 = ok(await sdk("GET", "/contacts/search", { params: { email: "l1@example.test" } })).contact;
      refused(await sdk("DELETE", `/contacts/${l1.id}`, { key: OTHER }), 404);
      const deleted = ok(await sdk("DELETE", `/contacts/${l1.id}`));
      expect(deleted).toMatchObject({ isDeleted: true, contact: { id: l1.id } });
      refused(await sdk("GET", `/contacts/${l1.id}`), 404);
    });
  });

  describe("contact properties (§5)", () => {
    it("creates, lists (CUSTOM / INTERNAL / ALL) and updates properties of every type", async () => {
      const created: Record<string, any> = {};
      for (const [displayName, type, typeConfig] of [
        ["Company name", "STRING"], ["Seats", "NUMBER"], ["Renews at", "DATE"], ["VIP", "BOOLEAN"],
        ["Tier", "SELECT", { options: ["gold", "silver"] }], ["Tags", "SELECT", { multiple: true, options: ["a", "b", "c"] }],
      ] as Array<[string, string, object?]>) {
        const { property } = ok(await sdk("POST", "/contact-properties", { body: { displayName, type, description: `${displayName} of the customer`, typeConfig } }), 201);
        expect(property).toMatchObject({ id: expect.any(String), displayName, description: `${displayName} of the customer`, isInternal: false, workspaceId: "ws_sdk", createdAt: expect.any(String), typeConfig: expect.any(Object) });
        created[property.apiSlug] = property;
      }
      expect(Object.fromEntries(Object.entries(created).map(([slug, p]) => [slug, p.type]))).toEqual({
        companyName: "STRING", seats: "NUMBER", renewsAt: "DATE", vip: "BOOLEAN", tier: "SELECT", tags: "MULTI_SELECT",
      });
      expect(created.tier.typeConfig).toEqual({ multiple: false, options: [
        { id: expect.any(String), value: "gold", displayName: "gold", color: expect.any(String) },
        { id: expect.any(String), value: "silver", displayName: "silver", color: expect.any(String) },
      ] });
      expect(created.tags.typeConfig.multiple).toBe(true);
      // Same display name again: a unique slug.
      expect(ok(await sdk("POST", "/contact-properties", { body: { displayName: "Seats", type: "NUMBER" } }), 201).property.apiSlug).toBe("seats2");

      const custom = ok(await sdk("GET", "/contacts/properties", { params: { type: "CUSTOM", limit: 50 } })).properties;
      expect(custom.hasMore).toBe(false);
      expect(custom.items.map((p: any) => p.apiSlug).sort()).toEqual(["companyName", "plan", "renewsAt", "seats", "seats2", "tags", "tier", "vip"]);
      expect(custom.items.every((p: any) => !p.isInternal)).toBe(true);
      const internal = ok(await sdk("GET", "/contacts/properties", { params: { type: "INTERNAL", limit: 50 } })).properties.items;
      expect(internal.map((p: any) => p.apiSlug)).toEqual(expect.arrayContaining(["email", "firstName", "lastName", "avatarUrl", "city", "language", "phone", "birthday", "countryCode", "status"]));
      expect(internal.every((p: any) => p.isInternal && typeof p.createdAt === "string")).toBe(true);
      const page = ok(await sdk("GET", "/contacts/properties", { params: { limit: 3 } })).properties;
      expect(page).toMatchObject({ hasMore: true });
      expect(page.items).toHaveLength(3);

      const renamed = ok(await sdk("PUT", `/contact-properties/${created.seats.id}`, { body: { displayName: "Licensed seats", description: "How many" } })).property;
      expect(renamed).toMatchObject({ id: created.seats.id, apiSlug: "seats", displayName: "Licensed seats", description: "How many", type: "NUMBER" });
      refused(await sdk("PUT", `/contact-properties/${created.seats.id}`, { body: { displayName: "x" }, key: OTHER }), 404);
      refused(await sdk("POST", "/contact-properties", { body: { displayName: "Empty", type: "SELECT" } }), 400);
    });

    it("checks custom values against their type with a 400 naming the property", async () => {
      const email = "typed@example.test";
      const set = (properties: Record<string, unknown>) => sdk("POST", "/contacts", { body: { properties: { email, ...properties } } });
      const contact = ok(await set({ companyName: "Acme", seats: 3, renewsAt: "2027-01-31", vip: true, tier: "gold", tags: ["a", "b"] }), 201).contact;
      expect(contact.properties).toMatchObject({ companyName: "Acme", seats: 3, renewsAt: "2027-01-31T00:00:00.000Z", vip: true, tier: "gold", tags: ["a", "b"] });
      for (const [properties, name] of [
        [{ companyName: "x".repeat(256) }, "companyName"], [{ seats: "three" }, "seats"], [{ renewsAt: "soon" }, "renewsAt"],
        [{ vip: "yes" }, "vip"], [{ tier: "bronze" }, "tier"], [{ tags: ["z"] }, "tags"],
      ] as Array<[Record<string, unknown>, string]>) {
        const body = refused(await set(properties), 400, "invalid_property_value");
        expect(body.message).toContain(`"${name}"`);
      }
      expect(refused(await set({ nickname: "x" }), 400, "unknown_contact_property").message).toContain("nickname");
      // A multi-select array replaces; { add, remove } edits.
      expect(ok(await sdk("PUT", `/contacts/${contact.id}`, { body: { properties: { tags: { add: ["c"], remove: ["a"] } } } })).contact.properties.tags).toEqual(["b", "c"]);
      expect(ok(await sdk("PUT", `/contacts/${contact.id}`, { body: { properties: { tags: ["a"] } } })).contact.properties.tags).toEqual(["a"]);
    });
  });

  describe("transactional templates (§3.4) and a templated send's sender (DESIGN §6)", () => {
    it("lists 15 by default, newest first, with cursor, sort and status", async () => {
      const first = ok(await sdk("GET", "/transactional")).transactional;
      expect(first.items).toHaveLength(15);
      expect(first).toMatchObject({ hasMore: true, cursor: expect.any(String) });
      const rest = ok(await sdk("GET", "/transactional", { params: { cursor: first.cursor } })).transactional;
      expect(rest).toEqual({ items: [expect.objectContaining({ name: "receipt" })], cursor: null, hasMore: false });
      const asc = ok(await sdk("GET", "/transactional", { params: { limit: 2, sort: "createdAt.asc", status: "ACTIVE" } })).transactional;
      expect(asc.items.map((t: any) => t.name)).toEqual(["receipt", "plain"]);
      expect(ok(await sdk("GET", "/transactional", { params: { status: "DRAFT" } })).transactional).toEqual({ items: [], cursor: null, hasMore: false });
      refused(await sdk("GET", "/transactional", { params: { limit: 101 } }), 400);
      expect(ok(await sdk("GET", "/transactional", { key: OTHER })).transactional.items).toEqual([]);
    });

    it("gets one by id with every field the client reads", async () => {
      const receipt = ok(await sdk("GET", "/transactional", { params: { limit: 1, sort: "createdAt.asc" } })).transactional.items[0];
      const { transactional } = ok(await sdk("GET", `/transactional/${receipt.id}`));
      expect(transactional).toEqual({
        id: receipt.id, name: "receipt", displayName: "receipt", subject: "Receipt {{orderId}}", status: "ACTIVE",
        createdAt: expect.any(String), updatedAt: expect.any(String),
        variables: { orderId: { id: "orderId", defaultValue: "" }, firstName: { id: "firstName", defaultValue: "" } },
        bodyHtml: "<p>Order {{orderId}} for {{firstName}}</p>", bodyText: "Order {{orderId}}", previewText: "Thanks",
        fromEmail: "billing@acme.test", fromName: "Acme Billing", replyTo: [{ email: "help@acme.test", name: "Help" }],
      });
      refused(await sdk("GET", `/transactional/${receipt.id}`, { key: OTHER }), 404);
      refused(await sdk("GET", "/transactional/tpl_01jqz8k4m2x7v9c3n5b6t1w0ye"), 404);
    });

    it("sends a templated email from the template's sender, and a template without one from the workspace default", async () => {
      ok(await sdk("POST", "/emails", { body: { template: "receipt", to: "buyer@example.test", variables: { orderId: "42", firstName: "Bo" } } }));
      ok(await sdk("POST", "/emails", { body: { template: "plain", to: "plain@example.test" } }));
      const [receipt, plain] = await Promise.all([mail("buyer@example.test"), mail("plain@example.test")]);
      expect(receipt.from).toMatchObject({ address: "billing@acme.test", name: "Acme Billing" });
      expect(receipt.replyTo?.[0]).toMatchObject({ address: "help@acme.test" });
      expect(plain.from?.address).toBe("founder@gmail.test");
      // A template's sender is checked against the verified senders when it is saved.
      const spoof = refused(await sdk("POST", "/templates", { body: { name: "spoof", subject: "x", html: "<p>x</p>", fromEmail: "eve@evil.test" } }), 400, "invalid_from");
      expect(spoof).toMatchObject({ allowedEmails: ["founder@gmail.test"], allowedDomains: ["acme.test"] });
    });

    it("a transactional send's contactProperties make a TRANSACTIONAL_EMAIL contact kept out of audiences until subscribed", async () => {
      ok(await sdk("POST", "/emails", { body: { from: "Acme <hello@acme.test>", to: "walkin@example.test", subject: "Hi", html: "<p>Hi</p>", contactProperties: { firstName: "Walk", plan: "free" } } }));
      const contact = await eventually(async () => ok(await sdk("GET", "/contacts/search", { params: { email: "walkin@example.test" } })).contact);
      expect(contact).toMatchObject({ source: "TRANSACTIONAL_EMAIL", properties: { firstName: "Walk", plan: "free", status: "OPT_IN_PENDING" } });
      const audience = ok(await sdk("GET", "/contacts", { params: { status: "SUBSCRIBED", limit: 100 } })).contacts.items.map((c: any) => c.properties.email);
      expect(audience).not.toContain("walkin@example.test");
      // The owner adds the address through the API: now subscribed.
      expect(ok(await sdk("POST", "/contacts", { body: { properties: { email: "walkin@example.test" } } })).contact.properties.status).toBe("SUBSCRIBED");
    });
  });

  describe("identities (§7)", () => {
    it("lists verified and pending senders", async () => {
      const accounts = connectClient(AccountsService, `http://127.0.0.1:${sys.ports.accounts}`);
      await accounts.addVerifiedEmail({ workspaceId: "ws_sdk", email: "pending@gmail.test" });
      await accounts.addDomain({ workspaceId: "ws_sdk", domain: "pending.test" });
      const { identities } = ok(await sdk("GET", "/identities"));
      expect(identities.emails).toEqual(expect.arrayContaining([{ email: "founder@gmail.test", status: "VERIFIED" }, { email: "pending@gmail.test", status: "PENDING" }]));
      expect(identities.domains).toEqual(expect.arrayContaining([{ domain: "acme.test", status: "VERIFIED" }, { domain: "pending.test", status: "PENDING" }]));
      expect(ok(await sdk("GET", "/identities", { key: OTHER })).identities).toEqual({ emails: [], domains: [{ domain: "other.test", status: "VERIFIED" }] });
    });
  });

  describe("API keys (§6)", () => {
    it("validates and describes the calling key; an invalid key is a 401", async () => {
      expect(ok(await sdk("GET", "/api-keys/check"))).toEqual({ status: "SUCCEED", displayName: "editor", role: "EDITOR" });
      expect(ok(await sdk("GET", "/api-keys/check", { key: VIEWER }))).toEqual({ status: "SUCCEED", displayName: "bootstrap", role: "VIEWER" });
      refused(await sdk("GET", "/api-keys/check", { key: "mr_test_nobody_123" }), 401);
      const { apiKey } = ok(await sdk("GET", "/api-keys/current"));
      // lastUsedAt: written in the background when a key authenticates (at most once a minute), so present or not yet.
      const { lastUsedAt, ...info } = apiKey;
      expect(info).toEqual({
        id: expect.stringMatching(/^key_/), displayName: "editor", role: "EDITOR", status: "ACTIVE", prefix: expect.any(String),
        createdAt: expect.any(String), updatedAt: expect.any(String), workspaceId: "ws_sdk",
      });
      if (lastUsedAt !== undefined) expect(Number.isNaN(Date.parse(lastUsedAt))).toBe(false);
    });

    it("creates (secret once), lists, updates and revokes keys of its own workspace only", async () => {
      const created = ok(await sdk("POST", "/workspaces/ws_sdk/api-keys", { body: { displayName: "ci", role: "VIEWER" } }), 201).apiKey;
      expect(created).toMatchObject({ displayName: "ci", role: "VIEWER", status: "ACTIVE", workspaceId: "ws_sdk", secretKey: expect.stringMatching(/^mr_live_/) });
      expect(ok(await sdk("GET", "/api-keys/check", { key: created.secretKey }))).toMatchObject({ role: "VIEWER", displayName: "ci" });
      const second = ok(await sdk("POST", "/workspaces/ws_sdk/api-keys", { body: { displayName: "deploy", role: "EDITOR" } }), 201).apiKey;

      const page = ok(await sdk("GET", "/workspaces/ws_sdk/api-keys", { params: { limit: 1, sort: "createdAt.desc" } })).apiKeys;
      expect(page).toMatchObject({ hasMore: true, startAt: expect.any(String) });
      expect(page.items.map((k: any) => k.id)).toEqual([second.id]);
      expect(page.items[0].secretKey).toBeUndefined();
      const all = ok(await sdk("GET", "/workspaces/ws_sdk/api-keys", { params: { sort: "createdAt.asc" } })).apiKeys;
      expect(all.hasMore).toBe(false);
      expect(all.items.map((k: any) => k.displayName).slice(-2)).toEqual(["ci", "deploy"]);
      const fromStart = ok(await sdk("GET", "/workspaces/ws_sdk/api-keys", { params: { startAt: new Date(page.startAt).toISOString(), limit: 100 } })).apiKeys;
      expect(fromStart.items.map((k: any) => k.id)).toContain(created.id);

      const promoted = ok(await sdk("POST", `/workspaces/ws_sdk/api-keys/${created.id}`, { body: { displayName: "ci-2", role: "EDITOR" } })).apiKey;
      expect(promoted).toMatchObject({ id: created.id, displayName: "ci-2", role: "EDITOR", status: "ACTIVE" });
      expect(promoted.secretKey).toBeUndefined();
      const deleted = ok(await sdk("DELETE", `/workspaces/ws_sdk/api-keys/${created.id}`));
      expect(deleted).toMatchObject({ isDeleted: true, apiKey: { id: created.id, status: "ARCHIVED" } });
      refused(await sdk("GET", "/api-keys/check", { key: created.secretKey }), 401);

      for (const [method, path, body] of [
        ["GET", "/workspaces/ws_sdk_other/api-keys", undefined],
        ["POST", "/workspaces/ws_sdk_other/api-keys", { displayName: "x", role: "EDITOR" }],
        ["POST", `/workspaces/ws_sdk_other/api-keys/${second.id}`, { displayName: "x" }],
        ["DELETE", `/workspaces/ws_sdk_other/api-keys/${second.id}`, undefined],
      ] as const) {
        refused(await sdk(method, path, { body }), 404);
      }
      refused(await sdk("DELETE", `/workspaces/ws_sdk_other/api-keys/${second.id}`, { key: OTHER }), 404, "api_key_not_found");
    });

    it("a VIEWER key reads but cannot change or send anything; a key with no scopes can do nothing", async () => {
      ok(await sdk("GET", "/contacts", { key: VIEWER }));
      ok(await sdk("GET", "/contacts/properties", { key: VIEWER, params: { type: "CUSTOM", limit: 50 } }));
      ok(await sdk("GET", "/transactional", { key: VIEWER }));
      ok(await sdk("GET", "/identities", { key: VIEWER }));
      ok(await sdk("GET", "/workspaces/ws_sdk/api-keys", { key: VIEWER }));
      const writes: Array<[("POST" | "PUT" | "DELETE"), string, unknown]> = [
        ["POST", "/contacts", { properties: { email: "viewer@example.test" } }],
        ["POST", "/contacts/batch", { contacts: [{ properties: { email: "viewer@example.test" } }] }],
        ["PUT", "/contacts/ctc_01jqz8k4m2x7v9c3n5b6t1w0ye", { properties: {} }],
        ["DELETE", "/contacts/by-email/ann%40example.test", undefined],
        ["POST", "/contact-properties", { displayName: "X", type: "STRING" }],
        ["POST", "/emails", { from: "founder@gmail.test", to: "viewer@example.test", subject: "x", html: "<p>x</p>" }],
        ["POST", "/events", { event: "x", identify: { email: "viewer@example.test" } }],
        ["POST", "/workspaces/ws_sdk/api-keys", { displayName: "x", role: "EDITOR" }],
      ];
      for (const [method, path, body] of writes) refused(await sdk(method, path, { key: VIEWER, body }), 401);
      expect(ok(await sdk("GET", "/contacts/search", { params: { email: "viewer@example.test" } })).contact).toBeNull();
      for (const path of ["/contacts", "/api-keys/check", "/identities"]) refused(await sdk("GET", path, { key: SCOPELESS }), 401);
    });
  });

  describe("events (§8)", () => {
    it("records one event, writes its traits onto the contact, and publishes it on the event stream", async () => {
      const sub: Subscription = nc.subscribe(CONTACT_EVENTS_SUBJECTS);
      const received: Array<{ subject: string; name: string; workspaceId: string; email: string }> = [];
      void (async () => {
        for await (const m of sub) {
          const e = fromBinary(ContactEventSchema, m.data);
          received.push({ subject: m.subject, name: e.name, workspaceId: e.workspaceId, email: e.email });
        }
      })();
      await nc.flush();
      const generated = ok(await sdk("POST", "/events", { body: { event: "user.signup", identify: { email: "evy@example.test", traits: { firstName: "Evy", plan: "trial" } }, properties: { via: "ads" } } }));
      expect(generated).toEqual({ success: true, messageId: expect.any(String) });
      const given = ok(await sdk("POST", "/events", { body: { event: "order:paid", identify: { email: "evy@example.test" }, timestamp: 1_700_000_000, messageId: "msg-1" } }));
      expect(given).toEqual({ success: true, messageId: "msg-1" });
      const contact = ok(await sdk("GET", "/contacts/search", { params: { email: "evy@example.test" } })).contact;
      expect(contact.properties).toMatchObject({ firstName: "Evy", plan: "trial", status: "SUBSCRIBED" });
      const events = ok(await sdk("GET", `/contacts/${contact.id}/events`)).events;
      expect(events.items.map((e: any) => [e.event, e.messageId])).toEqual([["order:paid", "msg-1"], ["user.signup", generated.messageId]]);
      expect(events.items[0].timestamp).toBe("2023-11-14T22:13:20.000Z");
      expect(events.items[1].properties).toEqual({ via: "ads" });
      await eventually(async () => (received.length >= 2 ? received : undefined));
      expect(received).toEqual([
        { subject: "contact.events.user_signup", name: "user.signup", workspaceId: "ws_sdk", email: "evy@example.test" },
        { subject: "contact.events.order:paid", name: "order:paid", workspaceId: "ws_sdk", email: "evy@example.test" },
      ]);
      sub.unsubscribe();
      refused(await sdk("POST", "/events", { body: { event: "bad name!", identify: { email: "evy@example.test" } } }), 400, "invalid_event");
      refused(await sdk("POST", "/events", { body: { event: "x", identify: {} } }), 400);
      refused(await sdk("GET", `/contacts/${contact.id}/events`, { key: OTHER }), 404);
    });

    it("records a batch: accepted, duplicated and failed events by index", async () => {
      const res = ok(await sdk("POST", "/events/batch", {
        body: {
          events: [
            { event: "page.view", identify: { email: "evy@example.test" }, messageId: "msg-1" },
            { event: "page.view", identify: { email: "evy@example.test" }, timestamp: "2026-03-01T10:00:00+01:00" },
            { event: "page view", identify: { email: "evy@example.test" } },
            { event: "page.view", identify: { email: "not an address" } },
            { event: "page.view", identify: { email: "evy@example.test" }, messageId: "msg-2" },
          ],
        },
      }));
      expect(res).toEqual({
        accepted: 2, failed: 2, duplicated: 1,
        events: [
          { index: 0, messageId: "msg-1", status: "duplicate" },
          { index: 1, messageId: expect.any(String), status: "accepted" },
          { index: 4, messageId: "msg-2", status: "accepted" },
        ],
        errors: [
          { index: 2, errors: [{ code: "invalid_event", message: expect.any(String) }] },
          { index: 3, errors: [{ code: "invalid_email", message: expect.any(String) }] },
        ],
      });
      expect(ok(await sdk("POST", "/events/batch", { body: { events: [{ event: "page.view", identify: { email: "evy@example.test" }, messageId: "msg-2" }] } }))).toMatchObject({ accepted: 0, duplicated: 1 });
      refused(await sdk("POST", "/events/batch", { body: { events: [] } }), 400);
    });
  });

  async function mail(address: string, timeoutMs = 20_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const msg = sys.sink!.messages.find((m) => m.to.includes(address));
      if (msg) return PostalMime.parse(msg.raw);
      if (Date.now() > deadline) throw new Error(`no mail to ${address}\n${await sys.log("email")}\n${await sys.log("delivery")}`);
      await sleep(50);
    }
  }

  async function eventually<T>(probe: () => Promise<T | null | undefined>, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > deadline) throw new Error("condition not met in time");
      await sleep(100);
    }
  }
});
