import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { ContactService, ContactSource, ContactStatus, PropertyType, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { connectClient, createLogger, errorInfoOf, startConnectServer, type ConnectServer } from "@mailroom/kit";
import { directoryRoutes, memoryDirectory } from "../../services/audience/src/testing.js";

const BOOTSTRAP = {
  workspaces: [
    {
      id: "ws_a", name: "A", apiKeys: [{ key: "mr_test_a_key_1", scopes: ["api_user"] }],
      verifiedDomains: ["a.test"], monthlyLimit: 30,
      contactProperties: [{ slug: "plan", type: "string" }],
      contacts: [{ email: "ann@a.test", firstName: "Ann", properties: { plan: "pro" } }],
      templates: [{ name: "welcome", subject: "Hi {{firstName}}", html: "<p>{{plan}}</p>" }],
    },
    { id: "ws_b", name: "B", apiKeys: [{ key: "mr_test_b_key_1", scopes: ["api_user"] }] },
  ],
};

/** Runs a call and returns the ConnectError it failed with. */
async function failure(p: Promise<unknown>): Promise<ConnectError> {
  const err = await p.then(() => undefined, (e) => e);
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}

describe("accounts, templates and contacts over Connect (real server on a free port)", () => {
  let server: ConnectServer;
  let client: Client<typeof AccountsService>;
  let audience: Client<typeof ContactService>;
  let templates: Client<typeof TemplateService>;

  beforeAll(async () => {
    const dir = await memoryDirectory();
    // AccountsService, TemplateService and ContactService on one server (directoryRoutes).
    server = await startConnectServer({ routes: directoryRoutes(dir), port: 0, logger: createLogger("connect-test", "silent") });
    client = connectClient(AccountsService, server.url);
    audience = connectClient(ContactService, server.url);
    templates = connectClient(TemplateService, server.url);
    const loaded = await client.loadBootstrap({ json: JSON.stringify(BOOTSTRAP) });
    expect(loaded.workspaceIds).toEqual(["ws_a", "ws_b"]);
  });
  afterAll(async () => server?.close());

  it("authenticates keys and refuses unknown or under-scoped ones with Unauthenticated", async () => {
    // api_user (the bootstrap default) implies api_read.
    expect(await client.authenticate({ apiKey: "mr_test_a_key_1" })).toMatchObject({ workspaceId: "ws_a", scopes: ["api_user", "api_read"] });
    const unknown = await failure(client.authenticate({ apiKey: "mr_test_nobody_1" }));
    expect(unknown.code).toBe(Code.Unauthenticated);
    expect(errorInfoOf(unknown)).toMatchObject({ code: "unauthorized", httpStatus: 401 });
    const scoped = await failure(client.authenticate({ apiKey: "mr_test_a_key_1", requiredScopes: ["admin"] }));
    expect(errorInfoOf(scoped)?.code).toBe("insufficient_scope");
  });

  it("creates a key shown once, then only its prefix; revoked keys stop working", async () => {
    const created = await client.createApiKey({ workspaceId: "ws_b", name: "cli", scopes: ["api_user", "admin"] });
    expect(created.plainKey).toMatch(/^mr_live_[0-9A-Za-z]{32}$/);
    const listed = await client.listApiKeys({ workspaceId: "ws_b" });
    expect(JSON.stringify(listed, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(created.plainKey);
    expect(listed.apiKeys.find((k) => k.id === created.apiKey!.id)?.prefix).toBe(created.plainKey.slice(0, 12));
    await client.revokeApiKey({ workspaceId: "ws_b", keyId: created.apiKey!.id });
    expect((await failure(client.authenticate({ apiKey: created.plainKey }))).code).toBe(Code.Unauthenticated);
  });

  it("keeps tenants apart on every contact and template RPC", async () => {
    const notFound = async (p: Promise<unknown>) => {
      const err = await failure(p);
      expect(err.code).toBe(Code.NotFound);
      return errorInfoOf(err)?.code;
    };
    expect(await notFound(audience.getContact({ workspaceId: "ws_b", email: "ann@a.test" }))).toBe("contact_not_found");
    const ann = await audience.getContact({ workspaceId: "ws_a", email: "ANN@a.test" });
    expect(ann.contact).toMatchObject({ email: "ann@a.test", firstName: "Ann", properties: { plan: "pro" } });
    expect(await notFound(audience.getContact({ workspaceId: "ws_b", contactId: ann.contact!.id }))).toBe("contact_not_found");
    expect(await notFound(audience.updateContact({ workspaceId: "ws_b", contact: { email: "ann@a.test", firstName: "Evil" } }))).toBe("contact_not_found");
    expect(await notFound(audience.deleteContact({ workspaceId: "ws_b", email: "ann@a.test" }))).toBe("contact_not_found");
    expect((await audience.listContacts({ workspaceId: "ws_b", page: { cursor: "ctc_00000000000000000000000000" } })).contacts).toEqual([]);
    const streamedB: string[] = [];
    for await (const page of audience.streamContacts({ workspaceId: "ws_b" })) streamedB.push(...page.contacts.map((c) => c.email));
    expect(streamedB).toEqual([]);
    expect(await notFound(templates.getTemplate({ workspaceId: "ws_b", name: "welcome" }))).toBe("template_not_found");
    expect(await notFound(templates.updateTemplate({ workspaceId: "ws_b", template: { name: "welcome", subject: "x", html: "x" } }))).toBe("template_not_found");
    expect(await notFound(templates.deleteTemplate({ workspaceId: "ws_b", name: "welcome" }))).toBe("template_not_found");
    expect((await templates.listTemplates({ workspaceId: "ws_b" })).templates).toEqual([]);
    expect((await client.checkSender({ workspaceId: "ws_b", from: "x@a.test" })).allowed).toBe(false);
    expect((await audience.getContact({ workspaceId: "ws_a", email: "ann@a.test" })).contact?.firstName).toBe("Ann");
    expect((await templates.getTemplate({ workspaceId: "ws_a", name: "welcome" })).template?.variables).toEqual(["firstName", "plan"]);
  });

  it("streams contacts in pages of batch_size", async () => {
    const contacts = Array.from({ length: 12 }, (_, i) => ({ email: `s${String(i).padStart(2, "0")}@b.test` }));
    const res = await audience.batchUpsertContacts({ workspaceId: "ws_b", contacts });
    expect(res.results.every((r) => r.ok && r.created)).toBe(true);
    const sizes: number[] = [];
    for await (const page of audience.streamContacts({ workspaceId: "ws_b", batchSize: 5 })) sizes.push(page.contacts.length);
    expect(sizes).toEqual([5, 5, 2]);
  });

  it("maps domain errors to codes with ErrorInfo and never leaves half-written state", async () => {
    const bad = await failure(audience.createContact({ workspaceId: "ws_a", contact: { email: "nope" } }));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(errorInfoOf(bad)).toMatchObject({ code: "invalid_email", httpStatus: 400 });
    const dup = await failure(audience.createContact({ workspaceId: "ws_a", contact: { email: "Ann@A.test" } }));
    expect(dup.code).toBe(Code.AlreadyExists);
    expect(errorInfoOf(dup)?.code).toBe("contact_exists");
    const type = await failure(audience.createContactProperty({ workspaceId: "ws_a", slug: "score", type: PropertyType.UNSPECIFIED }));
    expect(errorInfoOf(type)?.code).toBe("invalid_property_type");
    const unknownProp = await failure(audience.upsertContact({ workspaceId: "ws_a", contact: { email: "new@a.test", properties: { colour: "red" } } }));
    expect(errorInfoOf(unknownProp)?.code).toBe("unknown_contact_property");
    expect(await failure(audience.getContact({ workspaceId: "ws_a", email: "new@a.test" })).then((e) => e.code)).toBe(Code.NotFound);
    const props = await audience.listContactProperties({ workspaceId: "ws_a" });
    expect(props.properties.map((p) => p.slug)).toEqual([
      "firstName", "lastName", "email", "avatarUrl", "city", "language", "phone", "birthday", "countryCode", "status", "timezone", "plan",
    ]);
    expect(props.properties.filter((p) => p.builtIn)).toHaveLength(11);
    expect(props.properties[11]).toMatchObject({ slug: "plan", type: PropertyType.STRING, builtIn: false });
  });

  it("upserts transactional contactProperties, creating missing properties", async () => {
    const res = await audience.upsertContact({ workspaceId: "ws_a", createMissingProperties: true, contact: { email: "buyer@x.test", properties: { orders: 2, firstName: "Bo" } } });
    expect(res.created).toBe(true);
    expect(res.contact).toMatchObject({ firstName: "Bo", status: ContactStatus.SUBSCRIBED, subscribed: true, properties: { orders: 2 } });
    // From a transactional send: kept out of audiences until subscribed.
    const sent = await audience.upsertContact({ workspaceId: "ws_a", createMissingProperties: true, contact: { email: "tx@x.test", source: ContactSource.TRANSACTIONAL_EMAIL } });
    expect(sent.contact).toMatchObject({ status: ContactStatus.OPT_IN_PENDING, source: ContactSource.TRANSACTIONAL_EMAIL, subscribed: false });
    const again = await audience.upsertContact({ workspaceId: "ws_a", createMissingProperties: true, contact: { email: "buyer@x.test", properties: { orders: 3 } } });
    expect(again).toMatchObject({ created: false, contact: { properties: { orders: 3 } } });
  });

  it("reserves usage atomically over RPC: 100 parallel calls, limit 30", async () => {
    const results = await Promise.all(Array.from({ length: 100 }, () => client.reserveUsage({ workspaceId: "ws_a", count: 1n })));
    expect(results.filter((r) => r.granted)).toHaveLength(30);
    expect(results[0].limit).toBe(30n);
    expect(results[0].period).toMatch(/^\d{4}-\d{2}$/);
    await client.releaseUsage({ workspaceId: "ws_a", count: 5n, period: results[0].period });
    expect(await client.getUsage({ workspaceId: "ws_a" })).toMatchObject({ used: 25n, limit: 30n });
  });

  it("checks senders, suppression in bulk, and returns the DKIM key for verified domains", async () => {
    const sender = await client.checkSender({ workspaceId: "ws_a", from: "Team <team@A.TEST>" });
    expect(sender).toMatchObject({ allowed: true, address: "team@a.test", name: "Team", dkim: { domain: "a.test", selector: "mailroom" } });
    const refused = await client.checkSender({ workspaceId: "ws_a", from: "x@other.test" });
    expect(refused).toMatchObject({ allowed: false, allowedEmails: [], allowedDomains: ["a.test"] });
    expect(refused.dkim).toBeUndefined();
    await audience.addSuppression({ workspaceId: "ws_a", email: "b@x.test", reason: SuppressionReason.HARD_BOUNCE, detail: "550" });
    const check = await audience.checkSuppression({ workspaceId: "ws_a", emails: ["B@x.test", "fine@x.test"] });
    expect(check.suppressed.map((s) => [s.email, s.reason])).toEqual([["b@x.test", SuppressionReason.HARD_BOUNCE]]);
    expect((await audience.checkSuppression({ workspaceId: "ws_b", emails: ["b@x.test"] })).suppressed).toEqual([]);
  });

  it("loading the bootstrap again changes nothing visible", async () => {
    const keysBefore = await client.listApiKeys({ workspaceId: "ws_a" });
    await client.loadBootstrap({ json: JSON.stringify(BOOTSTRAP) });
    expect(await client.listApiKeys({ workspaceId: "ws_a" })).toEqual(keysBefore);
    const bad = await failure(client.loadBootstrap({ json: "{" }));
    expect(errorInfoOf(bad)?.code).toBe("invalid_bootstrap");
  });
});
