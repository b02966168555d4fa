import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { AccountsService, ApiKeySchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactSchema, ContactService, ContactSource, ContactStatus, PropertyType, type ContactInput } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { badRequest, conflict } from "@mailroom/kit/errors.js";
import { consoleGateway, csrfOf, Jar, type ConsoleBrowser } from "./sign-in-testing.js";
import { parseNewContact } from "./pages/contacts-new.js";

/**
 * "Add contact" over in-memory accounts and contacts services keeping CreateContact's contract: the form checked
 * with the /v1/contacts schema, the contact created with the API's ContactInput, the
 * audience unit's refusals on the form (never a 500), and an existing address linked.
 */
const WS = "ws_contacts_new";
const EXISTING = "ctc_01jaaaaaaaaaaaaaaaaaaaaaaa";
const NEW_ID = "ctc_01jbbbbbbbbbbbbbbbbbbbbbbb";
const KEYS: Record<string, string[]> = { mr_test_contacts_editor: ["api_user"], mr_test_contacts_viewer: ["api_read"] };
let created: ContactInput[];

const transport = memoryTransport(({ service }) => {
  service(AccountsService, {
    authenticate(req) {
      const scopes = KEYS[req.apiKey];
      if (!scopes) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { workspaceId: WS, keyId: `key_${scopes[0]}`, scopes };
    },
    getApiKey: (req) => ({ apiKey: create(ApiKeySchema, { id: req.keyId, workspaceId: WS, name: "k", scopes: [req.keyId.slice(4)], role: req.keyId === "key_api_user" ? "EDITOR" : "VIEWER" }) }),
    getWorkspace: (req) => ({ workspace: { id: req.workspaceId, name: "Acme" } }),
  });
  service(ContactService, {
    listContactProperties: () => ({
      properties: [
        { slug: "plan", type: PropertyType.SELECT, options: [{ value: "free" }, { value: "pro" }] },
        { slug: "city", type: PropertyType.STRING, builtIn: true },
      ],
    }),
    createContact(req) {
      const c = req.contact!;
      if (!c.email.includes("@")) throw badRequest("invalid_email", `${c.email} is not a valid email address`);
      const props = (c.properties ?? {}) as Record<string, unknown>;
      for (const slug of Object.keys(props)) {
        if (!["plan", "firstName", "lastName", "city"].includes(slug)) throw badRequest("unknown_contact_property", `Unknown contact property "${slug}"`);
      }
      if (props.plan !== undefined && props.plan !== "free" && props.plan !== "pro") throw badRequest("invalid_property_value", `plan: "${String(props.plan)}" is not one of free, pro`);
      if (c.email.toLowerCase() === "ann@example.test") throw conflict("contact_exists", `A contact with email ${c.email} already exists`);
      created.push(c);
      return { contact: create(ContactSchema, { id: NEW_ID, workspaceId: WS, email: c.email, status: c.status ?? ContactStatus.SUBSCRIBED }) };
    },
    listContacts: (req) => ({
      contacts: req.search === "ann@example.test" ? [create(ContactSchema, { id: "ctc_other", email: "ann@example.test.org" }), create(ContactSchema, { id: EXISTING, email: "Ann@Example.test" })] : [],
    }),
  });
  service(TeamService, { listMembers: () => ({ members: [] }) });
});

describe("console: add a contact", () => {
  let browser: ConsoleBrowser;
  let editor: Jar;

  const signIn = async (apiKey: string) => {
    const jar = new Jar();
    const page = await browser.get("/console/sign-in", jar);
    expect((await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey, next: "/console/contacts" })).statusCode).toBe(303);
    return jar;
  };
  const form = (fields: Record<string, string>) => ({ email: "", firstName: "", lastName: "", subscribed: "yes", properties: "", ...fields });

  beforeAll(async () => {
    browser = await consoleGateway(transport, { secret: "console-contacts-new-secret-0123456789ab", name: "console-contacts-new-test", authCacheMs: 0 });
    editor = await signIn("mr_test_contacts_editor");
  });
  beforeEach(() => {
    created = [];
  });

  it("offers the form beside Import CSV, with the workspace's properties as a hint", async () => {
    const list = await browser.get("/console/contacts", editor);
    expect(list.body).toMatch(/<a class="button" href="\/console\/contacts\/new">Add contact<\/a><a class="button" href="\/console\/contacts\/import">Import CSV<\/a>/);
    const page = await browser.get("/console/contacts/new", editor);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('id="new-contact"');
    expect(page.body).toContain('name="_csrf"');
    expect(page.body).toMatch(/<code>plan<\/code> \(one option: free, pro\)/);
    expect(page.body).not.toMatch(/<code>city<\/code> \(/);
  });

  it("creates the contact with the API's input and goes to it", async () => {
    const page = await browser.get("/console/contacts/new", editor);
    const res = await browser.post("/console/contacts", editor, {
      _csrf: csrfOf(page.body), ...form({ email: " new@example.test ", firstName: "Neo", lastName: "", subscribed: "no", properties: '{"plan":"pro","city":"Lyon"}' }),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/console/contacts/${NEW_ID}`);
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ email: "new@example.test", status: ContactStatus.UNSUBSCRIBED, source: ContactSource.DASHBOARD });
    expect(created[0].properties).toEqual({ plan: "pro", city: "Lyon", firstName: "Neo" });
  });

  it("shows what the schema or the audience unit refuses on the form, with what was typed, never a 500", async () => {
    const csrf = csrfOf((await browser.get("/console/contacts/new", editor)).body);
    const cases: Array<[Record<string, string>, number, RegExp]> = [
      [form({ email: "" }), 400, /properties\.email: properties\.email is required/],
      [form({ email: "x@example.test", properties: "{plan:" }), 400, /Properties: not valid JSON/],
      [form({ email: "x@example.test", properties: "[1]" }), 400, /Properties: write a JSON object/],
      [form({ email: "x@example.test", properties: '{"email":"y@example.test"}' }), 400, /Properties: email has its own field/],
      [form({ email: "x@example.test", properties: '{"plan":{"$x":[1,{"y":2}]},"n":[1]}' }), 400, /properties\.n/],
      [form({ email: "not-an-address" }), 400, /not-an-address is not a valid email address/],
      [form({ email: "x@example.test", properties: '{"shoe":44}' }), 400, /Unknown contact property &quot;shoe&quot;/],
      [form({ email: "x@example.test", properties: '{"plan":"gold"}' }), 400, /plan: &quot;gold&quot; is not one of free, pro/],
    ];
    for (const [fields, status, message] of cases) {
      const res = await browser.post("/console/contacts", editor, { _csrf: csrf, ...fields });
      expect(res.statusCode, JSON.stringify(fields)).toBe(status);
      expect(res.body, JSON.stringify(fields)).toMatch(message);
      expect(res.body).toContain('role="alert" id="nc-error"');
      expect(res.body).toContain('id="new-contact"');
    }
    expect(created).toHaveLength(0);
    // What was typed comes back, escaped.
    const typed = await browser.post("/console/contacts", editor, { _csrf: csrf, ...form({ email: "x@example.test", firstName: "<b>Bo</b>", properties: '{"plan":"gold"}', subscribed: "no" }) });
    expect(typed.body).toContain('value="&lt;b&gt;Bo&lt;/b&gt;"');
    expect(typed.body).toContain("{&quot;plan&quot;:&quot;gold&quot;}</textarea>");
    expect(typed.body).toContain('id="nc-unsub" name="subscribed" value="no" checked');
    expect(typed.body).not.toContain("<b>Bo</b>");
    expect(typed.body).toMatch(/id="nc-props"[^>]*aria-invalid="true"/);
  });

  it("answers an existing address with a link to that contact, changing nothing", async () => {
    const csrf = csrfOf((await browser.get("/console/contacts/new", editor)).body);
    const res = await browser.post("/console/contacts", editor, { _csrf: csrf, ...form({ email: "ann@example.test", firstName: "Changed" }) });
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain("A contact with this address exists already.");
    expect(res.body).toContain(`<a href="/console/contacts/${EXISTING}">Open that contact</a>`);
    expect(res.body).toMatch(/id="nc-email"[^>]*aria-invalid="true"/);
    expect(created).toHaveLength(0);
  });

  it("needs the CSRF token and an editing session; a read-only session sees no button", async () => {
    const forged = await browser.post("/console/contacts", editor, form({ email: "x@example.test" }));
    expect(forged.statusCode).toBe(403);
    const viewer = await signIn("mr_test_contacts_viewer");
    expect((await browser.get("/console/contacts/new", viewer)).statusCode).toBe(403);
    const list = await browser.get("/console/contacts", viewer);
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain("/console/contacts/new");
    const posted = await browser.post("/console/contacts", viewer, { _csrf: "x", ...form({ email: "x@example.test" }) });
    expect(posted.statusCode).toBe(403);
    expect(created).toHaveLength(0);
  });
});

describe("parseNewContact: the form as a POST /v1/contacts body", () => {
  it("builds the API's properties object and keeps status typed", () => {
    const r = parseNewContact({ email: " a@b.test ", firstName: " Ann ", lastName: "", subscribed: true, properties: ' { "tags": ["x"], "score": 3, "vip": true, "note": null } ' });
    expect(r).toEqual({ ok: true, body: { properties: { tags: ["x"], score: 3, vip: true, note: null, email: "a@b.test", firstName: "Ann", status: "SUBSCRIBED" } } });
  });

  it("names the field a complaint concerns", () => {
    const r = parseNewContact({ email: "a".repeat(600), firstName: "", lastName: "", subscribed: true, properties: "" });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.field).toBe("email");
  });
});
