import { describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { AutomationService, AutomationStatus, RunStatus } from "@mailroom/proto/automation/v1/automation_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { automationRoutes } from "./routes.js";
import { buildCatalogWorld, TEST_WS as WS } from "./testing.js";

const definition = {
  triggerJson: JSON.stringify({ type: "event", name: "signed_up" }),
  stepsJson: JSON.stringify([
    { id: "hello", type: "send", template: "welcome" },
    { id: "later", type: "wait", duration: "PT2S" },
  ]),
};

async function world() {
  const w = await buildCatalogWorld();
  return { ...w, client: createClient(AutomationService, memoryTransport(automationRoutes(w.automations))) };
}

const info = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e: unknown) => e));

describe("AutomationService routes", () => {
  it("maps create, get, list, update and the state moves to proto and back", async () => {
    const w = await world();
    const { automation } = await w.client.createAutomation({ workspaceId: WS, name: "Welcome", ...definition });
    expect(automation).toMatchObject({ workspaceId: WS, name: "Welcome", status: AutomationStatus.DRAFT, version: 1, reentryJson: '"once"', runs: { active: 0n, completed: 0n, exited: 0n } });
    expect(JSON.parse(automation!.triggerJson)).toEqual({ type: "event", name: "signed_up" });
    expect(JSON.parse(automation!.stepsJson)).toHaveLength(2);
    expect(automation!.createdAt?.seconds).toBe(BigInt(Date.parse("2030-01-15T12:00:00Z") / 1000));
    const id = automation!.id;

    expect((await w.client.getAutomation({ workspaceId: WS, automationId: id })).automation?.id).toBe(id);
    const listed = await w.client.listAutomations({ workspaceId: WS, page: { limit: 10 } });
    expect(listed.automations.map((a) => a.id)).toEqual([id]);
    expect(listed.page).toMatchObject({ hasMore: false, nextCursor: "" });

    // Only the fields set change; an unset optional keeps the current value.
    const updated = await w.client.updateAutomation({ workspaceId: WS, automationId: id, reentryJson: JSON.stringify({ after: "P30D" }) });
    expect(updated.automation).toMatchObject({ version: 2, name: "Welcome", reentryJson: '{"after":"P30D"}' });
    expect(JSON.parse(updated.automation!.stepsJson)).toHaveLength(2);

    expect((await w.client.activateAutomation({ workspaceId: WS, automationId: id })).automation?.status).toBe(AutomationStatus.ACTIVE);
    expect((await w.client.pauseAutomation({ workspaceId: WS, automationId: id })).automation?.status).toBe(AutomationStatus.PAUSED);
    const deleted = await w.client.deleteAutomation({ workspaceId: WS, automationId: id });
    expect(deleted.automation?.id).toBe(id);
    expect(w.runs.calls).toEqual([`hold:${id}`, `exitAll:${id}:automation_deleted`]);
    expect(await info(w.client.getAutomation({ workspaceId: WS, automationId: id }))).toMatchObject({ code: "automation_not_found", httpStatus: 404 });
  });

  it("answers refusals as ErrorInfo: the path of a bad definition, bad JSON, a state conflict", async () => {
    const w = await world();
    const badTemplate = await info(w.client.createAutomation({
      workspaceId: WS, name: "x", ...definition, stepsJson: JSON.stringify([{ id: "s", type: "send", template: "ghost" }]),
    }));
    expect(badTemplate).toMatchObject({ code: "invalid_automation", httpStatus: 400, message: 'steps[0].template: template "ghost" does not exist' });
    expect(JSON.parse(badTemplate!.extra.path)).toBe("steps[0].template");
    expect(await info(w.client.createAutomation({ workspaceId: WS, name: "x", ...definition, triggerJson: "{nope" }))).toMatchObject({
      code: "invalid_automation", message: "trigger: is not valid JSON",
    });
    const { automation } = await w.client.createAutomation({ workspaceId: WS, name: "x", ...definition });
    expect(await info(w.client.pauseAutomation({ workspaceId: WS, automationId: automation!.id }))).toMatchObject({ code: "automation_state", httpStatus: 409 });
    expect(await info(w.client.listRuns({ workspaceId: WS, automationId: automation!.id, status: 9 as RunStatus }))).toMatchObject({ code: "invalid_request" });
  });

  it("lists runs with every field, pages them, and serves per-step stats", async () => {
    const w = await world();
    const { automation } = await w.client.createAutomation({ workspaceId: WS, name: "x", ...definition });
    const id = automation!.id;
    const at = new Date("2030-01-15T12:00:00Z");
    w.runs.runs.push(
      {
        id: "run_2", workspaceId: WS, automationId: id, version: 1, contactId: "ctc_1", status: "EXITED", startedAt: at, endedAt: at, exitReason: "unsubscribed",
        steps: [{ stepId: "hello", type: "send", enteredAt: at, completedAt: at, emailId: "em_1" }],
      },
      { id: "run_1", workspaceId: WS, automationId: id, version: 1, contactId: "ctc_2", status: "ACTIVE", currentStepId: "later", nextAt: at, startedAt: at, steps: [] },
    );
    const first = await w.client.listRuns({ workspaceId: WS, automationId: id, page: { limit: 1 } });
    expect(first.runs).toHaveLength(1);
    expect(first.runs[0]).toMatchObject({ id: "run_2", status: RunStatus.EXITED, exitReason: "unsubscribed", currentStepId: "", steps: [{ stepId: "hello", type: "send", emailId: "em_1", branch: "" }] });
    expect(first.runs[0].nextAt).toBeUndefined();
    expect(first.page).toMatchObject({ hasMore: true, nextCursor: "run_2" });
    const second = await w.client.listRuns({ workspaceId: WS, automationId: id, page: { limit: 1, cursor: "run_2" } });
    expect(second.runs[0]).toMatchObject({ id: "run_1", status: RunStatus.ACTIVE, currentStepId: "later" });
    expect(second.page?.hasMore).toBe(false);
    const byContact = await w.client.listRuns({ workspaceId: WS, contactId: "ctc_1" });
    expect(byContact.runs.map((r) => r.id)).toEqual(["run_2"]);

    const stats = await w.client.getAutomationStats({ workspaceId: WS, automationId: id });
    expect(stats).toMatchObject({ automationId: id, version: 1 });
    expect(stats.steps.map((s) => [s.stepId, s.type, s.entered])).toEqual([["hello", "send", 1n], ["later", "wait", 2n]]);
  });
});
