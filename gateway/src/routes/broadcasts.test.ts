import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { documentedCalls, type DocumentedCalls } from "./documented-calls.testing.js";
import { BroadcastService } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { memoryDirectory } from "../../../services/audience/src/testing.js";
import { directoryClients } from "./directory-clients.testing.js";
import { broadcastRoutes } from "../../../services/broadcast/src/routes.js";
import { buildTestWorld, type TestWorld } from "../../../services/broadcast/src/testing.js";
import { PreSendCheckService } from "@mailroom/proto/broadcast/v1/check_pb.js";
import { checkRoutes } from "../../../services/broadcast/src/check-routes.js";
import { PreSendCheck } from "../../../services/broadcast/src/domain/check/pre-send-check.js";
import { silentLogger } from "@mailroom/kit/testing.js";
import { buildGateway } from "../app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";

/**
 * The /v1/broadcasts routes over the broadcast domain (in memory): the JSON envelopes, the
 * error bodies with `code`, the mapping of status and method strings, and every documented
 * response validated against the generated OpenAPI document.
 */


const WS = "ws_acme"; // the broadcast test world's workspace
const KEY = { authorization: "Bearer mr_test_bcgw_1" };


describe("gateway /v1/broadcasts", () => {
  let app: FastifyInstance;
  let world: TestWorld;
  let api: DocumentedCalls;

  beforeAll(async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load({
      workspaces: [
        { id: WS, name: "Acme", apiKeys: [{ key: "mr_test_bcgw_1", scopes: ["api_user"] }, { key: "mr_test_bcgw_ro", scopes: ["admin"] }] },
      ],
    });
    world = await buildTestWorld();
    world.directory.addContacts(3);
    const clients = {
      ...directoryClients(dir),
      broadcast: createClient(BroadcastService, memoryTransport(broadcastRoutes(world.service))),
      // Pre-send checks over the same world: links answer 404 when their path says "missing"; no spam filter.
      check: createClient(PreSendCheckService, memoryTransport(checkRoutes(new PreSendCheck({
        broadcasts: world.service,
        directory: world.directory,
        links: { check: async (urls) => urls.map((url) => ({ url, status: url.includes("missing") ? 404 : 200, redirects: [], finalUrl: url })) },
        spam: { score: async () => ({ scored: false, skipped: "no spam filter in this test" }) },
        clock: world.clock,
        logger: silentLogger,
      })))),
    } as unknown as ServiceClients;
    const deps: GatewayDeps = {
      config: { ...loadConfig({}), secret: "broadcast-gateway-test-secret-0123" },
      logger: createLogger("gateway-broadcasts-test", "silent"),
      clients,
      rateLimitPerMinute: 0,
      authCacheMs: 60_000,
    };
    app = await buildGateway(deps);
    api = await documentedCalls(app, KEY);
  });
  afterAll(async () => app?.close());

  /** Calls the gateway and validates the answer against the documented response of `op`. */
  const call = (op: string, url: string, body?: unknown, headers?: Record<string, string>) => api.call(op, url, body, headers);


  const draft = (over: Record<string, unknown> = {}) => ({
    name: "Spring",
    subject: "Hi {{firstName}}",
    fromEmail: "news@acme.test",
    fromName: "Acme",
    html: "<p>Hi {{firstName}} on {{plan}}</p>",
    audience: { all: true },
    ...over,
  });

  it("creates a DRAFT (201) with variables, every field, ISO timestamps and null for what is unset", async () => {
    const res = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ replyTo: ["help@acme.test"], text: "Hi", settings: { trackOpens: false } }));
    expect(res.statusCode).toBe(201);
    expect(res.data.variables).toEqual({ detected: ["firstName", "plan"], unknown: [] });
    expect(res.data.warnings).toBeUndefined();
    expect(res.data.broadcast).toMatchObject({
      status: "DRAFT", name: "Spring", audience: { all: true }, scheduledAt: null, sentAt: null, deliveryMethod: null,
      replyTo: ["help@acme.test"], text: "Hi", settings: { trackOpens: false, trackClicks: true }, html: "<p>Hi {{firstName}} on {{plan}}</p>",
    });
    expect(res.data.broadcast.id).toMatch(/^cmp_/);
    expect(Date.parse(res.data.broadcast.createdAt)).toBeGreaterThan(0);
    const big = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ html: `<p>${"x".repeat(110 * 1024)}</p>` }));
    expect(big.data.warnings).toEqual(["html_over_102kb_may_be_clipped"]);
  });

  it("answers refusals with code and their fields; schema refusals are invalid_payload", async () => {
    const missing = await call("POST /v1/broadcasts", "/v1/broadcasts", { ...draft(), name: undefined });
    expect(missing.data).toMatchObject({ statusCode: 400, error: "Bad Request", code: "invalid_payload" });
    expect(missing.data.message).toContain("name");
    const audience = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ audience: { all: false } }));
    expect(audience.data.code).toBe("invalid_payload");
    const unknown = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ html: "<p>{{coupon}} {{plan}}</p>" }));
    expect(unknown.data).toMatchObject({ statusCode: 400, code: "broadcast_unknown_variables", unknownVariables: ["coupon"] });
    const from = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ fromEmail: "x@evil.test" }));
    expect(from.data).toMatchObject({ statusCode: 400, code: "campaigns/invalid_from_email", allowedEmails: ["founder@gmail.test"], allowedDomains: ["acme.test"] });
    expect(from.data.docsUrl).toContain("campaigns");
    const large = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ html: "x".repeat(512_001) }));
    expect(large.data).toMatchObject({ statusCode: 413, code: "broadcast_html_too_large" });
    const json = await call("POST /v1/broadcasts", "/v1/broadcasts", "{nope");
    expect(json.data.code).toBe("invalid_json");
    const noKey = await call("POST /v1/broadcasts", "/v1/broadcasts", draft(), {});
    expect(noKey.data).toMatchObject({ statusCode: 401, code: "unauthorized" });
    const readOnly = await call("GET /v1/broadcasts", "/v1/broadcasts", undefined, { authorization: "Bearer mr_test_bcgw_ro" });
    expect(readOnly.statusCode).toBe(401);
  });

  it("lists newest first with a cursor, filters by status, and names the allowed statuses", async () => {
    const first = await call("GET /v1/broadcasts", "/v1/broadcasts?limit=1");
    expect(first.data.broadcasts.items).toHaveLength(1);
    expect(first.data.broadcasts.hasMore).toBe(true);
    const rest = await call("GET /v1/broadcasts", `/v1/broadcasts?limit=100&cursor=${first.data.broadcasts.cursor}`);
    expect(rest.data.broadcasts).toMatchObject({ cursor: null, hasMore: false });
    const all = [...first.data.broadcasts.items, ...rest.data.broadcasts.items];
    expect(all.map((b: { createdAt: string }) => b.createdAt)).toEqual(all.map((b: { createdAt: string }) => b.createdAt).sort().reverse());
    expect((await call("GET /v1/broadcasts", "/v1/broadcasts?status=SCHEDULED")).data.broadcasts.items).toEqual([]);
    const bad = await call("GET /v1/broadcasts", "/v1/broadcasts?status=SENT");
    expect(bad.data).toMatchObject({ statusCode: 400, code: "invalid_payload" });
    expect(bad.data.message).toMatch(/DRAFT.*SCHEDULED.*IN_PROGRESS.*COMPLETED/);
    expect((await call("GET /v1/broadcasts", "/v1/broadcasts?limit=101")).data.code).toBe("invalid_payload");
  });

  it("gets, tests, schedules and cancels with { broadcast } envelopes and 200", async () => {
    const { id } = (await call("POST /v1/broadcasts", "/v1/broadcasts", draft())).data.broadcast;
    const got = await call("GET /v1/broadcasts/{id}", `/v1/broadcasts/${id}`);
    expect(got.data.broadcast).toMatchObject({ id, status: "DRAFT", progress: { recipients: 0, sent: 0 } });
    expect((await call("GET /v1/broadcasts/{id}", "/v1/broadcasts/cmp_nope")).data).toMatchObject({ statusCode: 404, code: "broadcast_not_found" });
    expect((await call("GET /v1/broadcasts/{id}", "/v1/broadcasts/cmp_01jqz8k4m2x7v9c3n5b6t1w0ye")).data.code).toBe("broadcast_not_found");

    const test = await call("POST /v1/broadcasts/{id}/test", `/v1/broadcasts/${id}/test`, { emails: ["owner@acme.test"] });
    expect(test.statusCode).toBe(200);
    expect(test.data.broadcast.status).toBe("DRAFT");
    expect((await call("POST /v1/broadcasts/{id}/test", `/v1/broadcasts/${id}/test`, { emails: "owner@acme.test" })).data.code).toBe("invalid_test_recipients");
    const notMembers = await call("POST /v1/broadcasts/{id}/test", `/v1/broadcasts/${id}/test`, { emails: ["owner@acme.test", "x@example.test"] });
    expect(notMembers.data).toMatchObject({ code: "test_recipients_not_members", notMembers: ["x@example.test"] });
    expect((await call("POST /v1/broadcasts/{id}/test", "/v1/broadcasts/cmp_nope/test", { emails: ["owner@acme.test"] })).statusCode).toBe(404);

    expect((await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "FAST" })).data).toMatchObject({ code: "invalid_payload" });
    expect((await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, { sendAt: "tomorrow" })).data.code).toBe("invalid_send_at");
    const far = new Date(Date.parse("2030-01-15T12:00:00Z") + 91 * 86_400_000).toISOString();
    expect((await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, { sendAt: far })).data.code).toBe("send_at_out_of_range");
    const sendAt = "2030-01-16T09:30:00+01:00";
    const scheduled = await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, { sendAt, deliveryMethod: "SMART" });
    expect(scheduled.statusCode).toBe(200);
    expect(scheduled.data.broadcast).toMatchObject({ status: "SCHEDULED", deliveryMethod: "SMART", scheduledAt: "2030-01-16T08:30:00.000Z" });
    expect((await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, {})).data).toMatchObject({ statusCode: 409, code: "broadcast_not_schedulable" });
    expect((await call("POST /v1/broadcasts/{id}/schedule", "/v1/broadcasts/cmp_nope/schedule", {})).statusCode).toBe(404);
    expect((await call("GET /v1/broadcasts", "/v1/broadcasts?status=SCHEDULED")).data.broadcasts.items.map((b: { id: string }) => b.id)).toEqual([id]);

    const cancelled = await call("POST /v1/broadcasts/{id}/cancel", `/v1/broadcasts/${id}/cancel`);
    expect(cancelled.data.broadcast).toMatchObject({ id, status: "DRAFT", scheduledAt: null });
    expect((await call("POST /v1/broadcasts/{id}/cancel", `/v1/broadcasts/${id}/cancel`, {})).data).toMatchObject({ statusCode: 409, code: "broadcast_not_cancellable" });
    expect((await call("POST /v1/broadcasts/{id}/cancel", `/v1/broadcasts/${id}/cancel`, "{x")).data.code).toBe("invalid_json");
    expect((await call("POST /v1/broadcasts/{id}/cancel", "/v1/broadcasts/cmp_nope/cancel")).statusCode).toBe(404);

    // No body at all sends now with the safest method (PROGRESSIVE for an established account).
    const now = await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`);
    expect(now.data.broadcast).toMatchObject({ status: "SCHEDULED", deliveryMethod: "PROGRESSIVE" });
  });

  it("refuses a method a new account may not use, and the audience over the monthly limit", async () => {
    world.directory.setWorkspace(WS, { sendingAccountNew: true });
    const { id } = (await call("POST /v1/broadcasts", "/v1/broadcasts", draft())).data.broadcast;
    const asap = await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" });
    expect(asap.data).toMatchObject({ statusCode: 400, code: "campaigns/delivery_method_not_available" });
    world.directory.limit = world.directory.used + 1;
    const limit = await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, {});
    expect(limit.data).toMatchObject({ statusCode: 403, error: "Forbidden", code: "monthly_limit_reached" });
    world.directory.limit = 1_000_000;
    const warm = await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, {});
    expect(warm.data.broadcast.deliveryMethod).toBe("WARMUP");
    world.directory.setWorkspace(WS, { sendingAccountNew: false });
  });

  it("needs an api_user key, then gates in order: 403 not enabled, 402 add-on, 403 not verified, on every route", async () => {
    const { id } = (await call("POST /v1/broadcasts", "/v1/broadcasts", draft())).data.broadcast;
    const routes: Array<[string, string, unknown]> = [
      ["POST /v1/broadcasts", "/v1/broadcasts", draft()],
      ["GET /v1/broadcasts", "/v1/broadcasts", undefined],
      ["GET /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, undefined],
      ["GET /v1/broadcasts/{id}", "/v1/broadcasts/not-an-id", undefined], // gated before any lookup
      ["POST /v1/broadcasts/{id}/test", `/v1/broadcasts/${id}/test`, { emails: ["owner@acme.test"] }],
      ["POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, {}],
      ["POST /v1/broadcasts/{id}/cancel", `/v1/broadcasts/${id}/cancel`, {}],
      ["PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { name: "Renamed" }],
      ["POST /v1/broadcasts/{id}/ab/winner", `/v1/broadcasts/${id}/ab/winner`, { variant: 0 }],
      ["POST /v1/broadcasts/{id}/check", `/v1/broadcasts/${id}/check`, undefined],
    ];
    const steps: Array<[Record<string, boolean>, number, string]> = [
      [{ broadcastEarlyAccess: false, emailApiAddon: false, verified: false }, 403, "broadcast_api_not_enabled"],
      [{ broadcastEarlyAccess: true, emailApiAddon: false, verified: false }, 402, "broadcast_api_addon_required"],
      [{ broadcastEarlyAccess: true, emailApiAddon: true, verified: false }, 403, "broadcast_api_workspace_not_verified"],
    ];
    for (const [op, url, body] of routes) expect((await call(op, url, body, {})).data.code).toBe("unauthorized");
    try {
      for (const [flags, status, code] of steps) {
        world.directory.setWorkspace(WS, flags);
        for (const [op, url, body] of routes) {
          const res = await call(op, url, body);
          expect([op, res.statusCode, res.data.code]).toEqual([op, status, code]);
          expect(res.data.error).toBe(status === 402 ? "Payment Required" : "Forbidden");
        }
      }
    } finally {
      world.directory.setWorkspace(WS, { broadcastEarlyAccess: true, emailApiAddon: true, verified: true });
    }
  });

  it("takes every audience form, answers audienceCount on create, update and get; PATCH changes only what it names", async () => {
    const created = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ audience: { groups: ["vip", "grp_1"], exclude: { filter: { "properties.plan": "free" } }, topicId: "top_1" } }));
    expect(created.statusCode).toBe(201);
    expect(created.data.broadcast).toMatchObject({ audience: { groups: ["vip", "grp_1"], exclude: { filter: { "properties.plan": "free" } }, topicId: "top_1" }, audienceCount: 3 });
    expect(created.data.broadcast.audience).not.toHaveProperty("all");
    const { id } = created.data.broadcast;
    expect((await call("GET /v1/broadcasts/{id}", `/v1/broadcasts/${id}`)).data.broadcast).toMatchObject({ audience: { groups: ["vip", "grp_1"], topicId: "top_1" }, audienceCount: 3 });
    for (const audience of [{ segmentId: "seg_1" }, { filter: { $or: [{ "properties.plan": "pro" }, { groups: "vip" }] } }, { all: true, exclude: { groups: ["b"], segmentId: "seg_2" } }]) {
      const res = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ audience }));
      expect([res.statusCode, res.data.broadcast.audience]).toEqual([201, audience]);
    }
    // Not exactly one form: the schema's invalid_payload, before any service.
    for (const audience of [{}, { all: true, segmentId: "seg_1" }, { groups: [] }, { filter: "x" }, { all: true, exclude: { nope: 1 } }]) {
      expect([audience, (await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ audience }))).data.code]).toEqual([audience, "invalid_payload"]);
    }
    const missing = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ audience: { segmentId: "seg_gone1" } }));
    expect(missing.data).toMatchObject({ statusCode: 400, code: "audience_not_found", message: expect.stringContaining("seg_gone1") });

    // PATCH: the name only (audience kept), then the audience only (content kept).
    const renamed = await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { name: "Renamed" });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.data.broadcast).toMatchObject({ name: "Renamed", subject: "Hi {{firstName}}", audience: { groups: ["vip", "grp_1"], topicId: "top_1" }, audienceCount: 3 });
    expect(renamed.data.variables).toEqual({ detected: ["firstName", "plan"], unknown: [] });
    const everyone = await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { audience: { all: true } });
    expect(everyone.data.broadcast).toMatchObject({ name: "Renamed", audience: { all: true }, audienceCount: 3 });
    expect((await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { audience: { segmentId: "seg_gone2" } })).data.code).toBe("audience_not_found");
    expect((await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { audience: { all: true, groups: ["x"] } })).data.code).toBe("invalid_payload");
    expect((await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { html: `<p>${"x".repeat(520_000)}</p>` })).data).toMatchObject({ statusCode: 413, code: "broadcast_html_too_large" });
    expect((await call("PATCH /v1/broadcasts/{id}", "/v1/broadcasts/cmp_01jqz8k4m2x7v9c3n5b6t1w0ye", { name: "x" })).data.code).toBe("broadcast_not_found");
    expect((await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, {})).statusCode).toBe(200);
    expect((await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { name: "Too late" })).data).toMatchObject({ statusCode: 409, code: "broadcast_not_editable" });
  });

  it("A/B tests: abTest on create, update and get, refusals naming the field, the winner route's 200, 400 and 409", async () => {
    const abTest = { variants: [{ subject: "A {{firstName}}" }, { fromName: "Bee", previewText: "Pre" }], testShare: 0.5, metric: "clicks", waitFor: 3600 };
    const created = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ abTest }));
    expect(created.statusCode).toBe(201);
    const zero = { recipients: 0, delivered: 0, uniqueOpens: 0, uniqueClicks: 0, openRate: 0, clickRate: 0 };
    expect(created.data.broadcast.abTest).toEqual({
      variants: [{ subject: "A {{firstName}}", ...zero }, { fromName: "Bee", previewText: "Pre", ...zero }],
      testShare: 0.5, metric: "clicks", waitFor: 3600, state: "draft", waitUntil: null, winner: null, winnerChosenBy: null, winnerChosenAt: null,
    });
    const { id } = created.data.broadcast;
    expect((await call("GET /v1/broadcasts/{id}", `/v1/broadcasts/${id}`)).data.broadcast.abTest.metric).toBe("clicks");
    // A broadcast without one has no abTest at all.
    expect((await call("POST /v1/broadcasts", "/v1/broadcasts", draft())).data.broadcast).not.toHaveProperty("abTest");

    for (const [bad, field] of [
      [{ ...abTest, variants: [{ subject: "A" }] }, "abTest.variants"],
      [{ ...abTest, variants: [{ subject: "A" }, { subject: "Hi {{firstName}}" }] }, "abTest.variants[1]"],
      [{ ...abTest, testShare: 0.7 }, "abTest.testShare"],
      [{ ...abTest, waitFor: 60 }, "abTest.waitFor"],
      [{ ...abTest, waitFor: 3600.5 }, "abTest.waitFor"],
    ] as const) {
      const res = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ abTest: bad }));
      expect([res.statusCode, res.data.code, res.data.message.startsWith(field)]).toEqual([400, "invalid_payload", true]);
    }
    for (const [bad, field] of [[{ ...abTest, metric: "replies" }, "abTest.metric"], [{ ...abTest, waitFor: "4h" }, "abTest.waitFor"], [{ ...abTest, extra: 1 }, "abTest"]] as const) {
      const res = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ abTest: bad }));
      expect([res.data.code, res.data.message]).toEqual(["invalid_payload", expect.stringContaining(field)]);
    }

    // waitFor as an ISO 8601 duration, as automation waits take it; answers show seconds.
    const iso = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ abTest: { ...abTest, waitFor: "PT2H" } }));
    expect([iso.statusCode, iso.data.broadcast?.abTest?.waitFor]).toEqual([201, 7_200]);
    const patched = await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${iso.data.broadcast.id}`, { abTest: { ...abTest, waitFor: "P1DT30M" } });
    expect(patched.data.broadcast.abTest.waitFor).toBe(86_400 + 1_800);
    for (const [waitFor, words] of [["PT2X", /ISO 8601/], ["P1M", /months/], ["PT0.5H", /fraction/], ["2 hours", /ISO 8601/], ["PT1M", /300/], ["P8D", /604800/]] as const) {
      const res = await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ abTest: { ...abTest, waitFor } }));
      expect([res.statusCode, res.data.code, res.data.message], waitFor).toEqual([400, "invalid_payload", expect.stringMatching(/^abTest\.waitFor/)]);
      expect(res.data.message, waitFor).toMatch(words);
    }
    expect((await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ abTest: { ...abTest, waitFor: true } }))).data).toMatchObject({ statusCode: 400, code: "invalid_payload" });

    // PATCH: absent keeps the test, a new one replaces it, null removes it.
    expect((await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { name: "AB" })).data.broadcast.abTest.testShare).toBe(0.5);
    expect((await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { abTest: { ...abTest, testShare: 0.1 } })).data.broadcast.abTest.testShare).toBe(0.1);
    expect((await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { abTest: null })).data.broadcast).not.toHaveProperty("abTest");
    await call("PATCH /v1/broadcasts/{id}", `/v1/broadcasts/${id}`, { abTest });

    const winner = (variant: unknown, target = id) => call("POST /v1/broadcasts/{id}/ab/winner", `/v1/broadcasts/${target}/ab/winner`, { variant });
    expect((await winner(0)).data).toMatchObject({ statusCode: 409, code: "ab_test_not_waiting" });
    expect((await winner(0, "cmp_01jqz8k4m2x7v9c3n5b6t1w0ye")).data.code).toBe("broadcast_not_found");
    expect((await winner("first")).data.code).toBe("invalid_payload");
    expect((await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" })).statusCode).toBe(200);
    const sender = world.sender("gateway-test");
    for (let i = 0; i < 50 && (await sender.tick()) > 0; i++);
    const waiting = (await call("GET /v1/broadcasts/{id}", `/v1/broadcasts/${id}`)).data.broadcast;
    expect(waiting.abTest).toMatchObject({ state: "waiting", winner: null });
    expect(Date.parse(waiting.abTest.waitUntil)).toBeGreaterThan(0);
    expect((await winner(2)).data).toMatchObject({ statusCode: 400, code: "invalid_payload" });
    const chosen = await winner(1);
    expect(chosen.statusCode).toBe(200);
    expect(chosen.data.broadcast.abTest).toMatchObject({ state: "decided", winner: 1, winnerChosenBy: "user" });
    expect((await winner(0)).data).toMatchObject({ statusCode: 409, code: "ab_winner_already_chosen" });
  });

  it("checks a broadcast before sending (findings with their places), and a schedule with requireCleanCheck refuses while errors remain", async () => {
    const html = '<p>Hi {{firstName}}</p><p><a href="https://acme.test/missing">Old page</a> <a href="{{unsubscribeUrl}}">Unsubscribe</a></p>';
    const { id } = (await call("POST /v1/broadcasts", "/v1/broadcasts", draft({ html }))).data.broadcast;
    const checked = await call("POST /v1/broadcasts/{id}/check", `/v1/broadcasts/${id}/check`);
    expect(checked.statusCode).toBe(200);
    expect(checked.data.check).toMatchObject({
      spam: { skipped: "no spam filter in this test" },
      links: [{ url: "https://acme.test/missing", status: 404, redirects: [], finalUrl: "https://acme.test/missing" }],
      unsubscribe: { required: true },
    });
    expect(checked.data.check.errors).toContainEqual(expect.objectContaining({ level: "error", code: "link_broken", where: "https://acme.test/missing" }));
    expect((await call("POST /v1/broadcasts/{id}/check", "/v1/broadcasts/cmp_nope/check")).data).toMatchObject({ statusCode: 404, code: "broadcast_not_found" });
    const refused = await call("POST /v1/broadcasts/{id}/schedule", `/v1/broadcasts/${id}/schedule`, { requireCleanCheck: true });
    expect(refused.data).toMatchObject({ statusCode: 409, code: "check_failed" });
    expect(refused.data.errors).toContainEqual(expect.objectContaining({ code: "link_broken", where: "https://acme.test/missing" }));
    expect((await call("GET /v1/broadcasts/{id}", `/v1/broadcasts/${id}`)).data.broadcast.status).toBe("DRAFT");
  });

  it("drove every response the broadcast operations document", () => {
    // (A broadcast's stats are driven in openapi-emails.test.ts with the other outcome routes.)
    const missing = api.undriven((p) => p.startsWith("/v1/broadcasts") && !p.endsWith("/stats"));
    expect(missing).toEqual([]);
  });
});
