import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { AddSuppressionRequestSchema, ContactService, ContactSource, ContactStatus, CreateContactPropertyRequestSchema, PropertyType, SuppressionReason, UpdateContactRequestSchema } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { AccountsService, CreateApiKeyRequestSchema, LoadBootstrapRequestSchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { DeliveryMethod, ScheduleBroadcastRequestSchema } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { CreateTopicRequestSchema, DefaultSubscription } from "@mailroom/proto/audience/v1/topics_pb.js";
import { SendEmailRequestSchema } from "@mailroom/proto/email/v1/email_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { UpdateWebhookRequestSchema, WebhookService, WebhookStatus } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { ACTOR_HEADER, WITHHELD, bufferedAuditSink, parseActor, summarizeChange, type AuditRecord } from "./audit.js";
import { connectClient, startConnectServer, type ConnectServer } from "./connect.js";
import { appError } from "./errors.js";
import { createLogger } from "./logger.js";

describe("audit interceptor (kit Connect server with an audit sink)", () => {
  let server: ConnectServer;
  const recorded: AuditRecord[] = [];
  beforeAll(async () => {
    server = await startConnectServer({
      logger: createLogger("kit-audit-test"),
      audit: { record: (entry) => void recorded.push(entry) },
      routes: (router) => {
        router.service(ContactService, {
          updateContact: (req) => ({ contact: { id: req.contactId, email: "ada@example.com" } }),
          getContact: (req) => ({ contact: { id: req.contactId } }),
          deleteContact: () => {
            throw appError({ code: "contact_not_found", httpStatus: 404, message: "no such contact" });
          },
        });
        router.service(AccountsService, {
          createApiKey: () => ({ apiKey: { id: "key_new", name: "ci" }, plainKey: "mr_live_SECRETSECRET" }),
          loadBootstrap: () => ({ workspaceIds: ["ws_a", "ws_b"] }),
          reserveUsage: () => ({ granted: true }),
        });
        router.service(TeamService, {
          acceptInvitation: () => ({ member: { id: "mbr_new", email: "new@example.com" }, workspaceId: "ws_1" }),
        });
        router.service(WebhookService, {
          createWebhook: (req) => ({ webhook: { id: "wh_1", url: req.url } }),
        });
      },
    });
  });
  afterAll(() => server.close());
  const contacts = () => connectClient(ContactService, server.url);
  const accounts = () => connectClient(AccountsService, server.url);
  const as = (actor: string, requestId = "req-audit-1") => ({ headers: { [ACTOR_HEADER]: actor, "x-request-id": requestId } });

  it("records one entry per successful change with actor, action, resource, request id and changed fields", async () => {
    recorded.length = 0;
    await contacts().updateContact(
      { workspaceId: "ws_1", contactId: "ct_1", contact: { firstName: "Ada", properties: { plan: "pro" } } },
      as("key:key_123", "req-update-1"),
    );
    expect(recorded).toHaveLength(1);
    const [entry] = recorded;
    expect(entry).toMatchObject({
      workspaceId: "ws_1",
      actor: { kind: "key", id: "key_123" },
      action: "contact.update",
      resource: { type: "contact", id: "ct_1" },
      requestId: "req-update-1",
    });
    expect(entry!.summary).toEqual({ "contact.firstName": "Ada", "contact.properties.plan": "pro", contactId: "ct_1" });
    expect(entry!.at).toBeInstanceOf(Date);
  });

  it("reads, failures, calls without an actor and rows marked not audited record nothing", async () => {
    recorded.length = 0;
    await contacts().getContact({ workspaceId: "ws_1", contactId: "ct_1" }, as("member:mbr_1"));
    await expect(contacts().deleteContact({ workspaceId: "ws_1", contactId: "ct_x" }, as("member:mbr_1"))).rejects.toThrow(/no such contact/);
    await contacts().updateContact({ workspaceId: "ws_1", contactId: "ct_1", contact: { firstName: "B" } });
    await contacts().updateContact({ workspaceId: "ws_1", contactId: "ct_1", contact: { firstName: "B" } }, as("nobody"));
    await accounts().reserveUsage({ workspaceId: "ws_1", count: 1n }, as("key:key_1"));
    expect(recorded).toEqual([]);
  });

  it("never copies key material: a created key is recorded by id, its secret neither from the request nor the answer", async () => {
    recorded.length = 0;
    await accounts().createApiKey({ workspaceId: "ws_1", name: "ci", key: "mr_live_GIVENSECRET", scopes: ["api_user"] }, as("cli:alice"));
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ actor: { kind: "cli", id: "alice" }, action: "api_key.create", resource: { type: "api_key", id: "key_new" } });
    expect(recorded[0]!.summary).toEqual({ name: "ci", scopes: "api_user", key: WITHHELD });
    expect(JSON.stringify(recorded[0])).not.toMatch(/SECRET/);
  });

  it("a webhook URL's credentials are withheld", async () => {
    recorded.length = 0;
    await connectClient(WebhookService, server.url).createWebhook(
      { workspaceId: "ws_1", url: "https://user:hunter2@hooks.example.com/x", token: "whsec_abc" },
      as("member:mbr_1"),
    );
    expect(recorded[0]!.summary).toEqual({ url: "https://…@hooks.example.com/x", token: WITHHELD });
  });

  it("accepting an invitation (no actor yet) is recorded with the new member as its actor, the token withheld", async () => {
    recorded.length = 0;
    await connectClient(TeamService, server.url).acceptInvitation({ token: "inv.SECRET" }, { headers: { "x-request-id": "req-accept" } });
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ workspaceId: "ws_1", actor: { kind: "member", id: "mbr_new" }, action: "member.accept", resource: { type: "member", id: "mbr_new" }, summary: { token: WITHHELD } });
  });

  it("a bootstrap file is one entry per workspace it configured, the file never copied", async () => {
    recorded.length = 0;
    await accounts().loadBootstrap({ json: '{"workspaces":[{"keys":["mr_live_X"]}]}' }, as("cli:root"));
    expect(recorded.map((e) => e.workspaceId)).toEqual(["ws_a", "ws_b"]);
    expect(recorded[0]!.summary).toEqual({ json: WITHHELD });
  });
});

describe("summarizeChange", () => {
  it("a send names the fields it set, never recipients, subject, content or attachment bytes", () => {
    const req = create(SendEmailRequestSchema, {
      workspaceId: "ws_1",
      email: {
        to: "bob@example.com",
        content: { case: "raw", value: { html: "<p>secret letter</p>", subject: "Your code 123456", from: "a@example.com" } },
        attachments: [{ filename: "a.pdf", content: new Uint8Array(5000) }],
      },
    });
    const summary = summarizeChange(SendEmailRequestSchema, req, true);
    const text = JSON.stringify(summary);
    expect(text).not.toMatch(/bob@|secret letter|123456|a\.pdf/);
    expect(summary["email.to"]).toBe(WITHHELD);
    expect(summary["email.attachments"]).toBe(WITHHELD);
  });

  it("values are clipped and the number of fields capped", () => {
    const summary = summarizeChange(UpdateContactRequestSchema, create(UpdateContactRequestSchema, {
      contactId: "ct_1",
      contact: { firstName: "x".repeat(5000), properties: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p${i}`, i])) },
    }));
    expect(summary["contact.firstName"]!.length).toBeLessThanOrEqual(200);
    expect(Object.keys(summary).length).toBeLessThanOrEqual(40);
  });

  it("a secret-named key inside a property or trait value is withheld too", () => {
    const summary = summarizeChange(UpdateContactRequestSchema, create(UpdateContactRequestSchema, {
      contactId: "ct_1",
      contact: { properties: { crm: { owner: "bea", apiToken: "tok_SECRET", nested: [{ password: "hunter2" }] }, sessionToken: "x" } },
    }));
    expect(summary["contact.properties.crm"]).toBe('{"owner":"bea","apiToken":"","nested":[{"password":""}]}');
    expect(summary["contact.properties.sessionToken"]).toBe(WITHHELD);
  });

  it("names enum values as the public API does, not by their protobuf names", () => {
    const schedule = summarizeChange(ScheduleBroadcastRequestSchema, create(ScheduleBroadcastRequestSchema, { id: "cmp_1", deliveryMethod: DeliveryMethod.ASAP }));
    expect(schedule).toEqual({ id: "cmp_1", deliveryMethod: "ASAP" });
    const contact = summarizeChange(UpdateContactRequestSchema, create(UpdateContactRequestSchema, {
      contactId: "ct_1", contact: { status: ContactStatus.OPT_IN_PENDING, source: ContactSource.TRANSACTIONAL_EMAIL },
    }));
    expect(contact).toMatchObject({ "contact.status": "OPT_IN_PENDING", "contact.source": "TRANSACTIONAL_EMAIL" });
    expect(summarizeChange(CreateContactPropertyRequestSchema, create(CreateContactPropertyRequestSchema, { type: PropertyType.MULTI_SELECT }))).toMatchObject({ type: "MULTI_SELECT" });
    expect(summarizeChange(CreateTopicRequestSchema, create(CreateTopicRequestSchema, { defaultSubscription: DefaultSubscription.OPT_OUT }))).toMatchObject({ defaultSubscription: "OPT_OUT" });
    expect(summarizeChange(UpdateWebhookRequestSchema, create(UpdateWebhookRequestSchema, { status: WebhookStatus.PAUSED }))).toMatchObject({ status: "PAUSED" });
    // The suppression list's reasons are lower case in the API (GET /v1/suppressions).
    expect(summarizeChange(AddSuppressionRequestSchema, create(AddSuppressionRequestSchema, { email: "a@example.com", reason: SuppressionReason.HARD_BOUNCE }))).toMatchObject({ reason: "hard_bounce" });
  });

  it("a request with only its workspace has an empty summary", () => {
    expect(summarizeChange(CreateApiKeyRequestSchema, create(CreateApiKeyRequestSchema, { workspaceId: "ws_1" }))).toEqual({});
    expect(summarizeChange(LoadBootstrapRequestSchema, create(LoadBootstrapRequestSchema, {}))).toEqual({});
  });
});

describe("actor header", () => {
  it("parses key, member and cli actors and refuses anything else", () => {
    expect(parseActor("key:key_1")).toEqual({ kind: "key", id: "key_1", label: "" });
    expect(parseActor("member:mbr_1", encodeURIComponent("zoë@example.com"))).toEqual({ kind: "member", id: "mbr_1", label: "zoë@example.com" });
    expect(parseActor("member:mbr_1", "%E0%A4%A")).toEqual({ kind: "member", id: "mbr_1", label: "" });
    expect(parseActor("cli:alice")).toEqual({ kind: "cli", id: "alice", label: "alice" });
    for (const bad of [null, "", "system:x", "key:", "key:a b", "root"]) expect(parseActor(bad)).toBeUndefined();
  });
});

describe("bufferedAuditSink", () => {
  it("never waits for the publisher and drops past its limit", async () => {
    const releases: Array<() => void> = [];
    const published: string[] = [];
    const sink = bufferedAuditSink(
      { publish: (entry) => new Promise<void>((resolve) => releases.push(() => (published.push(entry.requestId), resolve()))) },
      createLogger("kit-audit-test"),
      2,
    );
    const entry = (requestId: string): AuditRecord => ({ workspaceId: "ws", at: new Date(), actor: { kind: "cli", id: "a", label: "a" }, action: "x.y", resource: { type: "x", id: "" }, requestId, summary: {} });
    sink.record(entry("1"));
    sink.record(entry("2"));
    sink.record(entry("3")); // dropped: two in flight
    const tick = () => new Promise((r) => setTimeout(r, 10));
    await tick();
    expect(releases).toHaveLength(2);
    for (const release of releases) release();
    await tick();
    sink.record(entry("4"));
    await tick();
    releases.at(-1)!();
    await tick();
    expect(published).toEqual(["1", "2", "4"]);
  });
});
