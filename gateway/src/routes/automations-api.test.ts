import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { documentedCalls, type DocumentedCalls } from "./documented-calls.testing.js";
import { AutomationService } from "@mailroom/proto/automation/v1/automation_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { memoryDirectory } from "../../../services/audience/src/testing.js";
import { directoryClients } from "./directory-clients.testing.js";
import { automationRoutes } from "../../../services/automation/src/routes.js";
import { buildCatalogWorld, TEST_WS, type CatalogWorld } from "../../../services/automation/src/testing.js";
import { buildGateway } from "../app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";

/**
 * The /v1/automations routes (and a contact's runs) over the automation unit's catalog in
 * memory: JSON envelopes, error bodies with `code` and `path`, and every documented response
 * validated against the generated OpenAPI document and driven at least once.
 */


const WS = TEST_WS;
const KEY = { authorization: "Bearer mr_test_autgw_1" };
const READ_ONLY = { authorization: "Bearer mr_test_autgw_ro" };
const ours = (p: string) => p.startsWith("/v1/automations") || p === "/v1/contacts/{id}/automation-runs";


describe("gateway /v1/automations", () => {
  let app: FastifyInstance;
  let world: CatalogWorld;
  let api: DocumentedCalls;
  let contactId: string;

  beforeAll(async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load({
      workspaces: [{ id: WS, name: "Acme", apiKeys: [{ key: "mr_test_autgw_1", scopes: ["api_user"] }, { key: "mr_test_autgw_ro", scopes: ["api_read"] }] }],
    });
    contactId = (await dir.contacts.create(WS, { email: "ann@example.test" }))._id;
    world = await buildCatalogWorld();
    const clients = {
      ...directoryClients(dir),
      automation: createClient(AutomationService, memoryTransport(automationRoutes(world.automations))),
    } as unknown as ServiceClients;
    const deps: GatewayDeps = {
      config: { ...loadConfig({}), secret: "automation-gateway-test-secret-01" },
      logger: createLogger("gateway-automations-test", "silent"),
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


  const welcome = (over: Record<string, unknown> = {}) => ({
    name: "Welcome",
    trigger: { type: "contact_created" },
    steps: [
      { id: "hello", type: "send", template: "welcome" },
      { id: "later", type: "wait", duration: "P2D" },
      { id: "pro", type: "condition", filter: { "properties.plan": "pro" }, then: [{ id: "tips", type: "send", template: "upgrade" }] },
    ],
    ...over,
  });

  it("creates a DRAFT at version 1 and reads it back in the public shape", async () => {
    const res = await call("POST /v1/automations", "/v1/automations", welcome({ trigger: { type: "group_joined", groupId: "vip" } }));
    expect(res.statusCode).toBe(201);
    expect(res.data.automation).toMatchObject({
      name: "Welcome", status: "DRAFT", version: 1, reentry: "once", trigger: { type: "group_joined", groupId: "grp_01" }, runs: { active: 0, completed: 0, exited: 0 },
    });
    expect(res.data.automation.id).toMatch(/^aut_/);
    expect(res.data.automation.steps[2]).toEqual(welcome().steps[2]);
    const got = await call("GET /v1/automations/{id}", `/v1/automations/${res.data.automation.id}`, undefined, READ_ONLY);
    expect(got.data.automation).toEqual(res.data.automation);
  });

  it("refuses bad definitions: the part's JSON type in the gateway, the rest in the unit with its path", async () => {
    const noSteps = await call("POST /v1/automations", "/v1/automations", { name: "x", trigger: { type: "contact_created" } });
    expect(noSteps.data).toMatchObject({ statusCode: 400, code: "invalid_request" });
    expect(noSteps.data.message).toMatch(/^steps/);
    expect((await call("POST /v1/automations", "/v1/automations", welcome({ steps: { id: "x" } }))).data.code).toBe("invalid_request");
    const steps = [{ id: "a", type: "condition", filter: { "properties.plan": "pro" }, then: [{ id: "b", type: "send", template: "ghost" }] }];
    const ghost = await call("POST /v1/automations", "/v1/automations", welcome({ steps }));
    expect(ghost.data).toMatchObject({ statusCode: 400, code: "invalid_automation", message: 'steps[0].then[0].template: template "ghost" does not exist', path: "steps[0].then[0].template" });
    expect(ghost.data.docsUrl).toMatch(/invalid_automation$/);
    expect((await call("POST /v1/automations", "/v1/automations", "{nope")).data.code).toBe("invalid_json");
    expect((await call("POST /v1/automations", "/v1/automations", welcome(), READ_ONLY)).statusCode).toBe(401);
  });

  it("lists newest first with a cursor", async () => {
    await call("POST /v1/automations", "/v1/automations", welcome({ name: "Second" }));
    const first = await call("GET /v1/automations", "/v1/automations?limit=1");
    expect(first.data.automations).toMatchObject({ items: [{ name: "Second" }], hasMore: true });
    const rest = await call("GET /v1/automations", `/v1/automations?limit=100&cursor=${first.data.automations.cursor}`);
    expect(rest.data.automations).toMatchObject({ hasMore: false, cursor: null });
    expect((await call("GET /v1/automations", "/v1/automations?cursor=nope")).data.code).toBe("invalid_cursor");
    expect((await call("GET /v1/automations", "/v1/automations?limit=500")).data.code).toBe("invalid_request");
  });

  it("updates to a new version, activates, pauses, deletes; wrong moves are 409 and unknown ids 404", async () => {
    const { id } = (await call("POST /v1/automations", "/v1/automations", welcome())).data.automation;
    const v2 = await call("PATCH /v1/automations/{id}", `/v1/automations/${id}`, { name: "Hello", reentry: { after: "P30D" } });
    expect(v2.data.automation).toMatchObject({ name: "Hello", version: 2, reentry: { after: "P30D" } });
    expect((await call("PATCH /v1/automations/{id}", `/v1/automations/${id}`, {})).data.code).toBe("invalid_request");
    expect((await call("PATCH /v1/automations/{id}", `/v1/automations/${id}`, { steps: [{ id: "w", type: "wait", duration: "PT0S" }] })).data).toMatchObject({ code: "invalid_automation", path: "steps[0].duration" });
    expect((await call("PATCH /v1/automations/{id}", "/v1/automations/aut_nope", { name: "x" })).data.code).toBe("automation_not_found");

    expect((await call("POST /v1/automations/{id}/pause", `/v1/automations/${id}/pause`)).data).toMatchObject({ statusCode: 409, code: "automation_state" });
    expect((await call("POST /v1/automations/{id}/activate", `/v1/automations/${id}/activate`)).data.automation.status).toBe("ACTIVE");
    expect((await call("POST /v1/automations/{id}/activate", `/v1/automations/${id}/activate`)).data.code).toBe("automation_state");
    expect((await call("POST /v1/automations/{id}/pause", `/v1/automations/${id}/pause`)).data.automation.status).toBe("PAUSED");
    expect((await call("POST /v1/automations/{id}/pause", "/v1/automations/aut_nope/pause")).statusCode).toBe(404);
    // Activation checks the references again.
    world.directory.templates.delete("upgrade");
    expect((await call("POST /v1/automations/{id}/activate", `/v1/automations/${id}/activate`)).data).toMatchObject({ code: "invalid_automation", path: "steps[2].then[0].template" });
    world.directory.templates.add("upgrade");
    expect((await call("POST /v1/automations/{id}/activate", "/v1/automations/aut_nope/activate")).statusCode).toBe(404);

    // Of two updates of the same version, the second written is a 409.
    let open!: () => void;
    world.directory.gate = new Promise((resolve) => (open = resolve));
    const racing = [
      call("PATCH /v1/automations/{id}", `/v1/automations/${id}`, { name: "A" }),
      call("PATCH /v1/automations/{id}", `/v1/automations/${id}`, { name: "B" }),
    ];
    await new Promise((resolve) => setTimeout(resolve, 20));
    open();
    world.directory.gate = undefined;
    expect((await Promise.all(racing)).map((r) => r.statusCode).sort()).toEqual([200, 409]);

    const deleted = await call("DELETE /v1/automations/{id}", `/v1/automations/${id}`);
    expect(deleted.data).toMatchObject({ deleted: true, automation: { id, status: "PAUSED" } });
    expect(world.runs.calls).toContain(`exitAll:${id}:automation_deleted`);
    expect((await call("DELETE /v1/automations/{id}", `/v1/automations/${id}`)).data.code).toBe("automation_not_found");
    expect((await call("GET /v1/automations/{id}", `/v1/automations/${id}`)).statusCode).toBe(404);
  });

  it("lists runs of an automation and of a contact, and per-step stats of a version", async () => {
    const { id } = (await call("POST /v1/automations", "/v1/automations", welcome())).data.automation;
    const at = new Date("2030-01-15T12:00:00Z");
    world.runs.runs.push(
      {
        id: "run_2", workspaceId: WS, automationId: id, version: 1, contactId, status: "EXITED", startedAt: at, endedAt: at, exitReason: "unsubscribed",
        steps: [{ stepId: "hello", type: "send", enteredAt: at, completedAt: at, emailId: "em_1" }],
      },
      { id: "run_1", workspaceId: WS, automationId: id, version: 1, contactId: "ctc_other", status: "ACTIVE", currentStepId: "later", nextAt: at, startedAt: at, steps: [{ stepId: "pro", type: "condition", enteredAt: at, branch: "then" }] },
    );
    const page = await call("GET /v1/automations/{id}/runs", `/v1/automations/${id}/runs?limit=1`, undefined, READ_ONLY);
    expect(page.data.runs).toMatchObject({ hasMore: true, cursor: "run_2" });
    expect(page.data.runs.items[0]).toEqual({
      id: "run_2", automationId: id, version: 1, contactId, status: "EXITED", startedAt: at.toISOString(), endedAt: at.toISOString(), exitReason: "unsubscribed",
      steps: [{ stepId: "hello", type: "send", enteredAt: at.toISOString(), completedAt: at.toISOString(), emailId: "em_1" }],
    });
    const active = await call("GET /v1/automations/{id}/runs", `/v1/automations/${id}/runs?status=ACTIVE`);
    expect(active.data.runs.items).toMatchObject([{ id: "run_1", currentStepId: "later", nextAt: at.toISOString(), steps: [{ branch: "then" }] }]);
    expect((await call("GET /v1/automations/{id}/runs", `/v1/automations/${id}/runs?contactId=${contactId}`)).data.runs.items.map((r: { id: string }) => r.id)).toEqual(["run_2"]);
    expect((await call("GET /v1/automations/{id}/runs", `/v1/automations/${id}/runs?status=DONE`)).data.code).toBe("invalid_request");
    expect((await call("GET /v1/automations/{id}/runs", "/v1/automations/aut_nope/runs")).data.code).toBe("automation_not_found");

    const mine = await call("GET /v1/contacts/{id}/automation-runs", `/v1/contacts/${contactId}/automation-runs`, undefined, READ_ONLY);
    expect(mine.data.runs).toMatchObject({ items: [{ id: "run_2" }], cursor: null, hasMore: false });
    expect((await call("GET /v1/contacts/{id}/automation-runs", "/v1/contacts/ctc_nope/automation-runs")).data.code).toBe("contact_not_found");
    expect((await call("GET /v1/contacts/{id}/automation-runs", `/v1/contacts/${contactId}/automation-runs?limit=0`)).data.code).toBe("invalid_request");

    const stats = await call("GET /v1/automations/{id}/stats", `/v1/automations/${id}/stats`, undefined, READ_ONLY);
    expect(stats.data.stats).toMatchObject({ automationId: id, version: 1 });
    expect(stats.data.stats.steps.map((s: { stepId: string }) => s.stepId)).toEqual(["hello", "later", "pro", "tips"]);
    expect(stats.data.stats.steps[0]).toEqual({ stepId: "hello", type: "send", entered: 1, waiting: 0, completed: 0, exited: 1 });
    expect((await call("GET /v1/automations/{id}/stats", `/v1/automations/${id}/stats?version=7`)).data.code).toBe("automation_not_found");
    expect((await call("GET /v1/automations/{id}/stats", `/v1/automations/${id}/stats?version=zero`)).data.code).toBe("invalid_request");
  });

  it("drove every response the automation operations document", () => {
    const missing = api.undriven(ours);
    expect(missing).toEqual([]);
  });
});
