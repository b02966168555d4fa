import { describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { buildCatalogWorld, TEST_WS as WS } from "../testing.js";
import type { Run } from "./model.js";

const welcome = () => ({
  name: "Welcome",
  trigger: { type: "contact_created" },
  steps: [
    { id: "hello", type: "send", template: "welcome" },
    { id: "pause", type: "wait", duration: "P1D" },
    {
      id: "pro",
      type: "condition",
      filter: { "properties.plan": "pro" },
      then: [{ id: "upsell", type: "send", template: "upgrade" }],
      else: [{ id: "tag", type: "add_to_group", groupId: "vip" }],
    },
  ],
});

/** The AppError a call refused with. */
async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof AppError)) throw new Error(`expected an AppError, got ${String(err)}`);
  return err;
}

describe("Automations: create, read, list", () => {
  it("creates a DRAFT at version 1 with reentry once and the group's publicId resolved to its id", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    expect(a).toMatchObject({ workspaceId: WS, name: "Welcome", status: "DRAFT", version: 1, reentry: "once", runs: { active: 0, completed: 0, exited: 0 } });
    expect(a.id).toMatch(/^aut_[0-9a-z]{26}$/);
    const tag = (a.steps[2] as { else: Array<{ groupId: string }> }).else[0];
    expect(tag.groupId).toBe("grp_01");
    const read = await w.automations.get(WS, a.id);
    expect((read.steps[2] as { else: Array<{ groupId: string }> }).else[0].groupId).toBe("grp_01");
    expect(read.createdAt).toEqual(w.clock.now());
    // The run engine's view: version 1 as saved, DRAFT, not deleted.
    expect(await w.catalog.version(WS, a.id, 1)).toMatchObject({ status: "DRAFT", deleted: false, definition: { reentry: "once" } });
    expect(await w.catalog.version(WS, a.id, 2)).toBeNull();
    expect(await w.catalog.version("ws_other", a.id, 1)).toBeNull();
  });

  it("resolves a group_joined trigger's publicId too, and another workspace cannot read it", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, { name: "VIP", trigger: { type: "group_joined", groupId: "vip" }, steps: [{ id: "s", type: "send", template: "welcome" }] });
    expect(a.trigger).toEqual({ type: "group_joined", groupId: "grp_01" });
    expect((await refusal(w.automations.get("ws_other", a.id))).code).toBe("automation_not_found");
  });

  it("lists newest first with a cursor, and refuses a foreign cursor and a bad limit", async () => {
    const w = await buildCatalogWorld();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await w.automations.create(WS, { ...welcome(), name: `A${i}` })).id);
    const first = await w.automations.list(WS, { limit: 2 });
    expect(first.items.map((a) => a.id)).toEqual([ids[2], ids[1]]);
    expect(first.hasMore).toBe(true);
    const rest = await w.automations.list(WS, { limit: 2, cursor: first.cursor });
    expect(rest).toMatchObject({ hasMore: false, cursor: "" });
    expect(rest.items.map((a) => a.id)).toEqual([ids[0]]);
    expect((await refusal(w.automations.list(WS, { cursor: "cmp_x" }))).code).toBe("invalid_cursor");
    expect((await refusal(w.automations.list(WS, { limit: 101 }))).code).toBe("invalid_request");
    expect((await w.automations.list("ws_other", {})).items).toEqual([]);
  });

  it("shows each automation's run counts from the run engine", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    w.runs.countsOf.set(a.id, { active: 2, completed: 5, exited: 1 });
    expect((await w.automations.get(WS, a.id)).runs).toEqual({ active: 2, completed: 5, exited: 1 });
    expect((await w.automations.list(WS, {})).items[0].runs).toEqual({ active: 2, completed: 5, exited: 1 });
  });
});

describe("Automations: validation names the path", () => {
  it("refuses a send step or trigger naming a layout or snippet: pieces of templates, never sent on their own", async () => {
    const w = await buildCatalogWorld();
    const steps = welcome().steps;
    (steps[0] as { template: string }).template = "frame";
    const layout = await refusal(w.automations.create(WS, { ...welcome(), steps }));
    expect(layout).toMatchObject({ code: "invalid_automation", httpStatus: 400, message: 'steps[0].template: "frame" is a layout, not a template (name a template of kind "template")' });
    expect(JSON.parse(layout.details.extra!.path)).toBe("steps[0].template");
    const nested = welcome().steps;
    (nested[2] as { then: Array<{ template: string }> }).then[0].template = "footer";
    expect((await refusal(w.automations.create(WS, { ...welcome(), steps: nested }))).message).toBe('steps[2].then[0].template: "footer" is a snippet, not a template (name a template of kind "template")');
    const trigger = await refusal(w.automations.create(WS, { ...welcome(), trigger: { type: "email_opened", template: "footer" } }));
    expect(trigger.message).toBe('trigger.template: "footer" is a snippet, not a template (name a template of kind "template")');
    expect((await w.automations.list(WS, {})).items).toEqual([]);
  });

  it("refuses an unknown template, group, property or filter property at its JSON path", async () => {
    const w = await buildCatalogWorld();
    const steps = welcome().steps;
    (steps[2] as { then: Array<{ template: string }> }).then[0].template = "nope";
    const template = await refusal(w.automations.create(WS, { ...welcome(), steps }));
    expect(template).toMatchObject({ code: "invalid_automation", httpStatus: 400, message: 'steps[2].then[0].template: template "nope" does not exist' });
    expect(JSON.parse(template.details.extra!.path)).toBe("steps[2].then[0].template");

    const group = await refusal(w.automations.create(WS, { ...welcome(), trigger: { type: "group_joined", groupId: "ghost" } }));
    expect(group.message).toBe('trigger.groupId: group "ghost" does not exist');

    const property = await refusal(w.automations.create(WS, { ...welcome(), trigger: { type: "property_changed", property: "shoeSize" } }));
    expect(property.message).toBe('trigger.property: property "shoeSize" does not exist');

    const broadcast = await refusal(w.automations.create(WS, { ...welcome(), trigger: { type: "email_opened", broadcastId: "cmp_ghost" } }));
    expect(broadcast.message).toBe('trigger.broadcastId: broadcast "cmp_ghost" does not exist');
    const clickTemplate = await refusal(w.automations.create(WS, { ...welcome(), trigger: { type: "email_clicked", template: "ghost" } }));
    expect(clickTemplate.message).toBe('trigger.template: template "ghost" does not exist');
    expect((await w.automations.create(WS, { ...welcome(), trigger: { type: "email_opened", broadcastId: "cmp_01", template: "welcome" } })).status).toBe("DRAFT");

    const filter = await refusal(w.automations.create(WS, { ...welcome(), trigger: { type: "contact_created", filter: { "properties.shoeSize": 42 } } }));
    expect(filter.message).toBe('trigger.filter.properties.shoeSize: unknown property "shoeSize"');
    expect(JSON.parse(filter.details.extra!.path)).toBe("trigger.filter.properties.shoeSize");
  });

  it("reports the first fault in definition order and asks the accounts and audience units once per name", async () => {
    const w = await buildCatalogWorld();
    const steps = [
      { id: "a", type: "send", template: "welcome" },
      { id: "b", type: "send", template: "ghost-1" },
      { id: "c", type: "send", template: "welcome" },
      { id: "d", type: "send", template: "ghost-2" },
    ];
    const err = await refusal(w.automations.create(WS, { name: "x", trigger: { type: "contact_created" }, steps }));
    expect(err.message).toMatch(/^steps\[1\]\.template: template "ghost-1"/);
    expect(w.directory.calls.filter((c) => c === "template:welcome")).toHaveLength(1);
  });

  it("refuses a malformed definition or name with invalid_automation before asking the accounts and audience units", async () => {
    const w = await buildCatalogWorld();
    const noTimeout = await refusal(w.automations.create(WS, {
      name: "x", trigger: { type: "contact_created" }, steps: [{ id: "w", type: "wait_for_event", event: "paid", then: [{ id: "t", type: "exit" }] }],
    }));
    expect(noTimeout.code).toBe("invalid_automation");
    expect(noTimeout.message).toMatch(/^steps\[0\]\.timeout: /);
    expect((await refusal(w.automations.create(WS, { ...welcome(), name: "  " }))).message).toMatch(/^name: /);
    expect((await refusal(w.automations.create(WS, { ...welcome(), name: 7 }))).message).toMatch(/^name: /);
    expect(w.directory.calls).toEqual([]);
  });
});

describe("Automations: versions", () => {
  it("an update makes version 2; version 1 stays readable for runs on it", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    w.clock.advance(60_000);
    const v2 = await w.automations.update(WS, a.id, { steps: [{ id: "only", type: "send", template: "day-2" }], reentry: { after: "P30D" } });
    expect(v2).toMatchObject({ version: 2, name: "Welcome", trigger: { type: "contact_created" }, reentry: { after: "P30D" } });
    expect(v2.updatedAt.getTime()).toBe(a.createdAt.getTime() + 60_000);
    expect((await w.catalog.version(WS, a.id, 1))!.definition.steps).toHaveLength(3);
    expect((await w.catalog.version(WS, a.id, 2))!.definition.steps).toEqual([{ id: "only", type: "send", template: "day-2" }]);
    const renamed = await w.automations.update(WS, a.id, { name: "Hello" });
    expect(renamed).toMatchObject({ version: 3, name: "Hello", reentry: { after: "P30D" } });
    expect((await w.automations.get(WS, a.id)).version).toBe(3);
  });

  it("of two updates of the same version, exactly one wins; the other is a 409", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    // Both read version 1 and wait at the reference check; then both write.
    let open!: () => void;
    w.directory.gate = new Promise((resolve) => (open = resolve));
    const racing = [w.automations.update(WS, a.id, { name: "One" }), w.automations.update(WS, a.id, { name: "Two" })];
    await new Promise((resolve) => setTimeout(resolve, 10));
    open();
    const results = await Promise.allSettled(racing);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0].reason).toMatchObject({ code: "automation_state", httpStatus: 409 });
    const now = await w.automations.get(WS, a.id);
    expect(now.version).toBe(2);
    expect(now.name).toBe((won[0] as PromiseFulfilledResult<{ name: string }>).value.name);
    expect((await w.catalog.version(WS, a.id, 2))!.definition).toBeDefined();
  });

  it("an invalid update changes nothing", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    await refusal(w.automations.update(WS, a.id, { steps: [{ id: "s", type: "send", template: "ghost" }] }));
    expect((await w.automations.get(WS, a.id)).version).toBe(1);
    expect((await refusal(w.automations.update(WS, "aut_nope", { name: "x" }))).code).toBe("automation_not_found");
  });
});

describe("Automations: state", () => {
  it("DRAFT → ACTIVE → PAUSED → ACTIVE, holding and releasing runs; wrong moves are 409", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    expect((await refusal(w.automations.pause(WS, a.id)))).toMatchObject({ code: "automation_state", httpStatus: 409 });
    expect((await w.automations.activate(WS, a.id)).status).toBe("ACTIVE");
    expect(w.runs.calls).toEqual([]); // nothing to release out of a DRAFT
    expect((await w.catalog.activeWithTrigger(WS, "contact_created")).map((x) => x.id)).toEqual([a.id]);
    expect((await refusal(w.automations.activate(WS, a.id))).code).toBe("automation_state");
    expect((await w.automations.pause(WS, a.id)).status).toBe("PAUSED");
    expect(await w.catalog.activeWithTrigger(WS, "contact_created")).toEqual([]);
    expect((await w.catalog.version(WS, a.id, 1))!.status).toBe("PAUSED");
    expect((await w.automations.activate(WS, a.id)).status).toBe("ACTIVE");
    expect(w.runs.calls).toEqual([`hold:${a.id}`, `release:${a.id}`]);
    expect((await refusal(w.automations.pause(WS, "aut_nope"))).code).toBe("automation_not_found");
  });

  it("activation checks the references again (a template deleted since is a 400)", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    w.directory.templates.delete("upgrade");
    expect((await refusal(w.automations.activate(WS, a.id))).message).toBe('steps[2].then[0].template: template "upgrade" does not exist');
    expect((await w.automations.get(WS, a.id)).status).toBe("DRAFT");
  });

  it("delete: runs exit with automation_deleted, then it is 404 everywhere and out of enrolment", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    await w.automations.activate(WS, a.id);
    expect((await w.catalog.activeWithTrigger(WS, "contact_created")).length).toBe(1);
    const deleted = await w.automations.delete(WS, a.id);
    expect(deleted).toMatchObject({ id: a.id, status: "ACTIVE" });
    expect(w.runs.calls).toEqual([`exitAll:${a.id}:automation_deleted`]);
    expect(await w.catalog.activeWithTrigger(WS, "contact_created")).toEqual([]);
    expect(await w.catalog.version(WS, a.id, 1)).toMatchObject({ deleted: true });
    for (const call of [w.automations.get(WS, a.id), w.automations.delete(WS, a.id), w.automations.activate(WS, a.id), w.automations.update(WS, a.id, { name: "x" })]) {
      expect((await refusal(call)).code).toBe("automation_not_found");
    }
    expect((await w.automations.list(WS, {})).items).toEqual([]);
  });
});

describe("Automations: runs and stats", () => {
  const run = (over: Partial<Run>): Run => ({
    id: "run_1", workspaceId: WS, automationId: "aut_x", version: 1, contactId: "ctc_1", status: "ACTIVE", startedAt: new Date(), steps: [], ...over,
  });

  it("lists an automation's runs (404 for an unknown one) and a contact's runs everywhere", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    w.runs.runs.push(run({ id: "run_1", automationId: a.id }), run({ id: "run_2", automationId: a.id, status: "COMPLETED" }), run({ id: "run_3", automationId: "aut_other" }));
    expect((await w.automations.runs(WS, { automationId: a.id })).runs.map((r) => r.id)).toEqual(["run_1", "run_2"]);
    expect((await w.automations.runs(WS, { automationId: a.id, status: "COMPLETED" })).runs.map((r) => r.id)).toEqual(["run_2"]);
    expect((await w.automations.runs(WS, { contactId: "ctc_1" })).runs).toHaveLength(3);
    expect((await refusal(w.automations.runs(WS, { automationId: "aut_nope" }))).code).toBe("automation_not_found");
    expect((await refusal(w.automations.runs(WS, {}))).code).toBe("invalid_request");
  });

  it("stats cover every step of the version asked for, depth first", async () => {
    const w = await buildCatalogWorld();
    const a = await w.automations.create(WS, welcome());
    await w.automations.update(WS, a.id, { steps: [{ id: "only", type: "exit" }] });
    const current = await w.automations.stats(WS, a.id);
    expect(current).toMatchObject({ automationId: a.id, version: 2 });
    expect(current.steps.map((s) => s.stepId)).toEqual(["only"]);
    const v1 = await w.automations.stats(WS, a.id, 1);
    expect(v1.steps.map((s) => s.stepId)).toEqual(["hello", "pause", "pro", "upsell", "tag"]);
    expect(v1.steps[3]).toMatchObject({ type: "send", entered: 4 });
    expect((await refusal(w.automations.stats(WS, a.id, 9))).code).toBe("automation_not_found");
  });
});
