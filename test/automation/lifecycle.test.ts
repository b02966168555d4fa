/**
 * An automation's life while runs wait in it (DESIGN §9.6, issue 29), with real processes and
 * the SMTP sink: a pause holds its runs past the end of their wait and activate lets them on,
 * each send once; a new version leaves the waiting runs on theirs; a contact that unsubscribes
 * or is deleted mid-run leaves it before its next send. One workspace per test.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestSystem } from "../harness/system.js";
import { automations, mailsTo, sleep, startAutomationSystem, stepsById, until, waitingIn, workspace } from "./support.js";

const PAUSE = "ws_auto_pause";
const VERSIONS = "ws_auto_versions";
const LEAVE = "ws_auto_leave";

describe("automation lifecycle with runs in progress (real processes)", () => {
  let sys: TestSystem;

  beforeAll(async () => {
    sys = await startAutomationSystem([
      workspace(PAUSE, ["held"]),
      workspace(VERSIONS, ["first-v1", "then-v1", "first-v2", "then-v2"]),
      workspace(LEAVE, ["hello", "later"]),
    ]);
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("pause holds a run whose wait ends meanwhile (nothing sent); activate sends it once", async () => {
    const auto = automations(sys, PAUSE);
    const automation = await auto.active({
      name: "Held", trigger: { type: "contact_created" },
      // 5 s: long enough to see the run in it and pause before it ends, on a loaded machine too.
      steps: [{ id: "w", type: "wait", duration: "PT5S" }, { id: "s", type: "send", template: "held" }],
    });
    const contact = await auto.contact("held@pause.test", "Hal");
    await until("the run waits", () => auto.runs(automation.id), (r) => waitingIn(r[0], "w"));
    const paused = await auto.api("POST", `/v1/automations/${automation.id}/pause`, {});
    expect([paused.status, paused.body.automation?.status]).toEqual([200, "PAUSED"]);
    // The wait ends at +5 s, while paused: the run holds at it, nothing goes out.
    await sleep(6_000);
    expect(mailsTo(sys, "held@pause.test")).toEqual([]);
    const held = (await auto.runs(automation.id))[0];
    expect(held).toMatchObject({ status: "ACTIVE", contactId: contact.id });
    expect(held.steps.map((s: any) => s.stepId)).not.toContain("s");
    // A paused automation cannot be paused again; activate lets the run on at once.
    expect((await auto.api("POST", `/v1/automations/${automation.id}/pause`, {})).body.code).toBe("automation_state");
    const resumedAt = Date.now();
    const activated = await auto.api("POST", `/v1/automations/${automation.id}/activate`, {});
    expect([activated.status, activated.body.automation?.status]).toEqual([200, "ACTIVE"]);
    await until("the held send arrives", () => mailsTo(sys, "held@pause.test"), (m) => m.length >= 1, 10_000);
    const run = await until("COMPLETED", async () => (await auto.runs(automation.id))[0], (r) => r.status === "COMPLETED");
    await sleep(1_500);
    const mails = mailsTo(sys, "held@pause.test");
    expect(mails.map((m) => m.subject)).toEqual(["held for Hal"]);
    // Sent after the activation, not at the end of the wait.
    expect(mails[0].receivedAt).toBeGreaterThanOrEqual(resumedAt);
    expect(Date.parse(stepsById(run).s.enteredAt)).toBeGreaterThanOrEqual(resumedAt - 50);
  }, 40_000);

  it("a new version while a run waits: that run finishes on version 1, a contact entering after gets version 2", async () => {
    const auto = automations(sys, VERSIONS);
    const stepsOf = (v: string) => [
      { id: "first", type: "send", template: `first-${v}` },
      { id: "w", type: "wait", duration: "PT2S" },
      { id: "then", type: "send", template: `then-${v}` },
    ];
    const automation = await auto.active({ name: "Versions", trigger: { type: "contact_created" }, steps: stepsOf("v1") });
    const early = await auto.contact("early@versions.test", "Eve");
    await until("the early run waits", () => auto.runs(automation.id), (r) => waitingIn(r[0], "w"));
    const patched = await auto.api("PATCH", `/v1/automations/${automation.id}`, { steps: stepsOf("v2") });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.automation).toMatchObject({ version: 2, status: "ACTIVE", steps: stepsOf("v2") });
    const late = await auto.contact("late@versions.test", "Leo");

    const runs = await until("both COMPLETED", () => auto.runs(automation.id), (r) => r.length === 2 && r.every((x) => x.status === "COMPLETED"), 20_000);
    await sleep(1_000);
    expect(mailsTo(sys, "early@versions.test").map((m) => m.subject)).toEqual(["first-v1 for Eve", "then-v1 for Eve"]);
    expect(mailsTo(sys, "late@versions.test").map((m) => m.subject)).toEqual(["first-v2 for Leo", "then-v2 for Leo"]);
    expect(runs.find((r) => r.contactId === early.id).version).toBe(1);
    expect(runs.find((r) => r.contactId === late.id).version).toBe(2);
    // Stats are per version.
    const v1 = await auto.api("GET", `/v1/automations/${automation.id}/stats?version=1`);
    const v2 = await auto.api("GET", `/v1/automations/${automation.id}/stats?version=2`);
    expect([v1.body.stats?.version, v2.body.stats?.version]).toEqual([1, 2]);
    for (const s of [...v1.body.stats.steps, ...v2.body.stats.steps]) expect([s.stepId, s.entered, s.completed]).toEqual([s.stepId, 1, 1]);
  }, 40_000);

  it("a contact that unsubscribes or is deleted during a wait leaves the run; the later send never happens", async () => {
    const auto = automations(sys, LEAVE);
    const automation = await auto.active({
      name: "Leavers", trigger: { type: "contact_created" },
      steps: [{ id: "hello", type: "send", template: "hello" }, { id: "w", type: "wait", duration: "PT5S" }, { id: "later", type: "send", template: "later" }],
    });
    const quitter = await auto.contact("quitter@leave.test", "Quinn");
    const gone = await auto.contact("gone@leave.test", "Gil");
    await until("both got the first send", () => [mailsTo(sys, "quitter@leave.test").length, mailsTo(sys, "gone@leave.test").length], ([a, b]) => a >= 1 && b >= 1, 15_000);
    const runsWaiting = await until("both wait", () => auto.runs(automation.id), (r) => r.length === 2 && r.every((x) => waitingIn(x, "w")));
    expect(runsWaiting.every((r) => r.status === "ACTIVE")).toBe(true);

    const unsub = await auto.api("PUT", `/v1/contacts/${quitter.id}`, { properties: { status: "UNSUBSCRIBED" } });
    expect(unsub.status, JSON.stringify(unsub.body)).toBe(200);
    const deleted = await auto.api("DELETE", `/v1/contacts/${gone.id}`);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);

    const runs = await until("both EXITED", () => auto.runs(automation.id), (r) => r.every((x) => x.status === "EXITED"), 10_000);
    expect(runs.find((r) => r.contactId === quitter.id).exitReason).toBe("unsubscribed");
    expect(runs.find((r) => r.contactId === gone.id).exitReason).toBe("deleted");
    // Past the end of the wait: still only the first message each.
    await sleep(5_500);
    expect(mailsTo(sys, "quitter@leave.test").map((m) => m.subject)).toEqual(["hello for Quinn"]);
    expect(mailsTo(sys, "gone@leave.test").map((m) => m.subject)).toEqual(["hello for Gil"]);
    const stats = await auto.stats(automation.id);
    const w = stats.steps.find((s: any) => s.stepId === "w");
    expect([w.entered, w.waiting, w.exited]).toEqual([2, 0, 2]);
    expect(stats.steps.find((s: any) => s.stepId === "later").entered).toBe(0);
    expect((await auto.get(automation.id)).runs).toEqual({ active: 0, completed: 0, exited: 2 });
  }, 40_000);
});
